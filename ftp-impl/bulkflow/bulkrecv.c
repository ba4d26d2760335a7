/* bulkrecv.c - the receiver of a bulk flow (see bulkrecv.h).
 *
 * Options Linux does not reliably carry from a listener to the accepted
 * socket (SCTP_DELAYED_SACK, SO_RCVBUF) are set on both: before listen, so
 * that the handshake advertises the window, and on the accepted socket.
 * Waiting is poll() with the timeout set to the next sample or the stall
 * limit; reads never block (MSG_DONTWAIT). */
#include "bulkrecv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bulkclock.h"
#include "bulkfail.h"
#include "events.h"
#include "sockstats.h"
#include "stackevents.h"
#include "str.h"
#include "sysutil.h"

#define READ_SIZE (256u * 1024u)
/* Reads between two looks at the clock while data keeps coming (a system
 * call costs about 75 us inside User-Mode Linux). */
#define READS_PER_CLOCK 8

struct receiver {
  const struct bulkopts *o;
  int lfd;
  struct xp_conn c;
  char *buf;
  uint64_t bytes;
  double first_t, last_t;
  int64_t last_progress_ms;
  struct bulk_clock clock;
  struct ss_counts counts; /* as of counts_t */
  double counts_t;
};

static void add_addr(struct event *e, const char *key, const struct addr *a) {
  char text[128];
  if (addr_to_str(a, text, sizeof text) == 0) {
    ev_str(e, key, text);
  }
}

static int listen_ready(struct receiver *r) {
  const struct bulkopts *o = r->o;
  struct xp_conn l;
  struct addr a;
  struct event e;
  int64_t rcvbuf;
  r->lfd = xp_listen(o->proto, &o->addr, &o->xp, 1);
  if (r->lfd < 0) {
    return bulk_fail(0, "listen: %s", strerror(errno));
  }
  l.fd = r->lfd;
  l.proto = o->proto;
  if (xp_local_addr(&l, &a) != 0 || (rcvbuf = ss_rcvbuf(&l)) < 0) {
    return bulk_fail(0, "reading the listener back: %s", strerror(errno));
  }
  ev_begin(&e, "ready");
  ev_str(&e, "proto", xp_proto_name(o->proto));
  xp_stack_fields(&e, &l, &o->xp);
  add_addr(&e, "listen", &a);
  ev_int(&e, "rcvbuf", rcvbuf);
  ev_end(&e);
  return 0;
}

static void add_applied(struct event *e, const struct bulkopts *o) {
  char item[64];
  ev_array_begin(e, "applied");
  if (o->xp.rcvbuf > 0) {
    (void)str_fmt(item, sizeof item, "SO_RCVBUF=%d", o->xp.rcvbuf);
    ev_array_str(e, item);
  }
  if (o->no_delayed_ack) {
    ev_array_str(e, o->proto == XP_TCP ? "TCP_QUICKACK after every read"
                                       : "SCTP_DELAYED_SACK sack_freq=1");
  }
  ev_array_end(e);
}

static int accept_one(struct receiver *r) {
  const struct bulkopts *o = r->o;
  struct addr peer, local;
  struct event e;
  int ready = sys_wait_fd(r->lfd, POLLIN, o->accept_timeout_s * 1000);
  if (ready == 0) {
    return bulk_fail(0, "no connection within %d s", o->accept_timeout_s);
  }
  if (ready < 0 || xp_accept(r->lfd, o->proto, &o->xp, &r->c, &peer) != 0) {
    return bulk_fail(0, "accept: %s", strerror(errno));
  }
  xp_close_listener(r->lfd); /* exactly one connection */
  r->lfd = -1;
  ev_begin(&e, "accepted");
  ev_str(&e, "proto", xp_proto_name(o->proto));
  xp_stack_fields(&e, &r->c, &o->xp);
  add_addr(&e, "peer", &peer);
  if (xp_local_addr(&r->c, &local) == 0) {
    add_addr(&e, "local", &local);
  }
  ev_bool(&e, "no_delayed_ack", o->no_delayed_ack);
  add_applied(&e, o);
  ss_settings_fields(&e, &r->c);
  ev_end(&e);
  return 0;
}

static void take_counts(struct receiver *r) {
  struct ss_counts k;
  if (ss_recv_counts(&r->c, &k) == 0) {
    r->counts = k;
    r->counts_t = sys_mono_now();
  }
}

static void emit_sample(struct receiver *r) {
  struct event e;
  ev_begin(&e, "sample");
  ev_u64(&e, "bytes", r->bytes);
  ev_end(&e);
  take_counts(r);
}

static void first_byte(struct receiver *r, ssize_t n) {
  struct event e;
  r->first_t = sys_mono_now();
  ev_begin_at(&e, "first_byte", r->first_t);
  ev_int(&e, "bytes", n);
  ev_end(&e);
}

/* The clock after some reads: the time of the last byte, and progress. */
static void note_progress(struct receiver *r) {
  r->last_t = sys_mono_now();
  r->last_progress_ms = (int64_t)(r->last_t * 1000.0);
}

/* Read what has arrived, until none is left or a sample is due.  1: the
 * peer's orderly end; 0: go on; -1: failed (status in *rc). */
static int read_burst(struct receiver *r, int *rc) {
  unsigned reads = 0;
  for (;;) {
    unsigned sid;
    int eor;
    ssize_t n = xp_recv_nowait(&r->c, r->buf, READ_SIZE, &sid, &eor);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (reads > 0) {
        note_progress(r);
      }
      return 0;
    }
    if (n < 0) {
      *rc = bulk_fail(r->bytes, "receive: %s", strerror(errno));
      return -1;
    }
    if (n == 0) {
      if (reads > 0) {
        note_progress(r);
      }
      return 1;
    }
    if (r->first_t == 0) {
      first_byte(r, n);
    }
    r->bytes += (uint64_t)n;
    if (r->o->no_delayed_ack && xp_quickack(&r->c) != 0) {
      *rc = bulk_fail(r->bytes, "TCP_QUICKACK: %s", strerror(errno));
      return -1;
    }
    if (++reads % READS_PER_CLOCK == 0) {
      note_progress(r);
      if (r->last_progress_ms >= r->clock.next_ms) {
        return 0;
      }
    }
  }
}

static int receive_all(struct receiver *r, int *rc) {
  int64_t stall_ms = (int64_t)r->o->stall_timeout_s * 1000;
  r->last_progress_ms = sys_mono_ms();
  bulk_clock_start(&r->clock, r->last_progress_ms, r->o->sample_ms);
  for (;;) {
    int64_t until = r->clock.next_ms < r->last_progress_ms + stall_ms
                        ? r->clock.next_ms
                        : r->last_progress_ms + stall_ms;
    int ready = sys_wait_fd(r->c.fd, POLLIN, sys_ms_left(until));
    int64_t now;
    if (ready < 0) {
      *rc = bulk_fail(r->bytes, "poll: %s", strerror(errno));
      return -1;
    }
    if (ready > 0) {
      int st = read_burst(r, rc);
      if (st != 0) {
        if (st > 0) {
          take_counts(r); /* TCP: exact; SCTP: if the association is left */
        }
        return st > 0 ? 0 : -1;
      }
    }
    now = sys_mono_ms();
    if (bulk_clock_due(&r->clock, now)) {
      emit_sample(r);
    }
    if (now - r->last_progress_ms >= stall_ms) {
      *rc = bulk_fail(r->bytes, "stalled: no byte for %d s",
                      r->o->stall_timeout_s);
      return -1;
    }
  }
}

static void emit_end(const struct receiver *r) {
  struct event e;
  ev_begin(&e, "end");
  ev_u64(&e, "bytes", r->bytes);
  if (r->first_t > 0) {
    ev_num(&e, "first_t", r->first_t);
    ev_num(&e, "last_t", r->last_t);
    ev_num(&e, "duration_s", r->last_t - r->first_t);
  } else {
    ev_null(&e, "first_t");
    ev_null(&e, "last_t");
    ev_null(&e, "duration_s");
  }
  ss_counts_fields(&e, &r->counts);
  xp_stack_end_fields(&e, r->o->proto, &r->o->xp);
  if (r->counts_t > 0) {
    ev_num(&e, "counts_t", r->counts_t);
  } else {
    ev_null(&e, "counts_t");
  }
  ev_end(&e);
}

static int run(struct receiver *r) {
  int rc = 0;
  if (listen_ready(r) != 0 || accept_one(r) != 0) {
    return 1;
  }
  if (receive_all(r, &rc) != 0) {
    return rc;
  }
  emit_end(r);
  return 0;
}

int bulk_recv(const struct bulkopts *o) {
  struct receiver r;
  int rc;
  memset(&r, 0, sizeof r);
  r.o = o;
  r.lfd = -1;
  r.c.fd = -1;
  r.counts.data_in = r.counts.acks_out = -1;
  r.buf = sys_malloc(READ_SIZE);
  rc = run(&r);
  if (r.lfd >= 0) {
    xp_close_listener(r.lfd);
  }
  if (r.c.fd >= 0) {
    xp_close(&r.c);
  }
  free(r.buf);
  return rc;
}
