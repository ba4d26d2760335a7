/* bulksend.c - the sender of a bulk flow (see bulksend.h).
 *
 * All waiting is in the kernel: clock_nanosleep until --start-at, poll()
 * for room in the send buffer with the timeout set to the next sample or
 * the end, and during the drain poll() with the same timeouts.  Writes never
 * block (MSG_DONTWAIT), so a sample is never late by more than one write. */
#define _GNU_SOURCE
#include "bulksend.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "bulkclock.h"
#include "bulkfail.h"
#include "events.h"
#include "sockstats.h"
#include "stackevents.h"
#include "str.h"
#include "sysutil.h"

/* Longest pause when the kernel reports room but refuses the write (memory
 * pressure): a bounded retry instead of a spin on poll(). */
#define BACKOFF_MS 10
/* Writes between two looks at the clock while the kernel takes them all (a
 * system call costs about 75 us inside User-Mode Linux). */
#define WRITES_PER_CLOCK 8

struct sender {
  const struct bulkopts *o;
  struct xp_conn c;
  char *payload;            /* write_size bytes, filled once */
  uint64_t bytes;           /* accepted by the kernel so far */
  double t_start;           /* connected: first write */
  int64_t end_ms;           /* the last write starts before this */
  int64_t last_progress_ms; /* last write the kernel took */
  struct bulk_clock clock;
  uint64_t backoffs;
};

/* A cheap pseudo-random pattern (xorshift32), generated once. */
static void fill_payload(char *p, size_t n) {
  uint32_t x = 2463534242u;
  size_t i;
  for (i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    p[i] = (char)(x & 0xff);
  }
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

static void add_addrs(struct event *e, const struct xp_conn *c) {
  struct addr a;
  char text[128];
  if (xp_local_addr(c, &a) == 0 && addr_to_str(&a, text, sizeof text) == 0) {
    ev_str(e, "local", text);
  }
  if (xp_peer_addr(c, &a) == 0 && addr_to_str(&a, text, sizeof text) == 0) {
    ev_str(e, "peer", text);
  }
}

static void add_applied(struct event *e, const struct bulkopts *o) {
  char item[64];
  ev_array_begin(e, "applied");
  if (o->xp.maxseg > 0) {
    (void)str_fmt(item, sizeof item, "%s=%d",
                  o->proto == XP_TCP ? "TCP_MAXSEG" : "SCTP_MAXSEG",
                  o->xp.maxseg);
    ev_array_str(e, item);
  }
  if (o->xp.sndbuf > 0) {
    (void)str_fmt(item, sizeof item, "SO_SNDBUF=%d", o->xp.sndbuf);
    ev_array_str(e, item);
  }
  if (o->xp.rcvbuf > 0) {
    (void)str_fmt(item, sizeof item, "SO_RCVBUF=%d", o->xp.rcvbuf);
    ev_array_str(e, item);
  }
  (void)str_fmt(item, sizeof item, "%s=%d",
                o->proto == XP_TCP ? "TCP_NODELAY" : "SCTP_NODELAY",
                o->xp.nodelay);
  ev_array_str(e, item);
  ev_array_end(e);
}

static void emit_connected(const struct sender *s, double t_connect,
                           double late_s) {
  const struct bulkopts *o = s->o;
  struct event e;
  ev_begin_at(&e, "connected", s->t_start);
  ev_str(&e, "proto", xp_proto_name(o->proto));
  xp_stack_fields(&e, &s->c, &o->xp);
  add_addrs(&e, &s->c);
  if (o->has_start_at) {
    ev_num(&e, "start_at", o->start_at);
    ev_num(&e, "late_s", late_s);
  } else {
    ev_null(&e, "start_at");
    ev_null(&e, "late_s");
  }
  ev_num(&e, "connect_s", s->t_start - t_connect);
  ev_num(&e, "duration_s", o->duration_s);
  ev_u64(&e, "write_size", o->write_size);
  add_applied(&e, o);
  ss_settings_fields(&e, &s->c);
  ev_end(&e);
}

static void emit_sample(const struct sender *s, const char *phase,
                        const struct ss_sample *sm) {
  struct event e;
  ev_begin(&e, "sample");
  ev_str(&e, "phase", phase);
  ev_u64(&e, "bytes", s->bytes);
  ss_sample_fields(&e, sm);
  ev_end(&e);
}

static void sample_now(const struct sender *s, const char *phase) {
  struct ss_sample sm;
  if (ss_sample(&s->c, &sm) == 0) {
    emit_sample(s, phase, &sm);
  }
}

/* Wait in the kernel until CLOCK_MONOTONIC reaches --start-at; *late_s: by
 * how much the connect starts after it (0 if on time). */
static int wait_for_start(const struct bulkopts *o, double *late_s) {
  double now = sys_mono_now();
  *late_s = 0;
  if (!o->has_start_at) {
    return 0;
  }
  if (now < o->start_at && sys_sleep_until(o->start_at) != 0) {
    return -1;
  }
  *late_s = sys_mono_now() - o->start_at;
  return 0;
}

/* Write until the kernel has no room, the time is up or a sample is due.
 * -1: the flow failed (status already reported in *rc). */
static int write_burst(struct sender *s, int *rc) {
  size_t size = s->o->write_size;
  unsigned writes = 0;
  for (;;) {
    /* TCP may take part of a write: go on from there.  SCTP takes whole
     * messages, so the offset stays 0. */
    size_t off = (size_t)(s->bytes % size);
    ssize_t n = xp_send_nowait(&s->c, s->payload + off, size - off, 0);
    int64_t now;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      now = sys_mono_ms();
      if (writes == 0) {
        s->backoffs++;
        (void)sys_poll(NULL, 0,
                       sys_ms_left(min64(now + BACKOFF_MS, s->clock.next_ms)));
      } else {
        s->last_progress_ms = now;
      }
      return 0;
    }
    if (n < 0) {
      *rc = bulk_fail(s->bytes, "send: %s", strerror(errno));
      return -1;
    }
    s->bytes += (uint64_t)n;
    if (++writes % WRITES_PER_CLOCK == 0) {
      now = sys_mono_ms();
      s->last_progress_ms = now;
      if (now >= s->end_ms || now >= s->clock.next_ms) {
        return 0;
      }
    }
  }
}

static int send_phase(struct sender *s, int *rc) {
  int64_t stall_ms = (int64_t)s->o->stall_timeout_s * 1000;
  int64_t now = sys_mono_ms();
  while (now < s->end_ms) {
    int64_t until = min64(min64(s->clock.next_ms, s->end_ms),
                          s->last_progress_ms + stall_ms);
    int ready = xp_wait_writable(&s->c, sys_ms_left(until));
    if (ready < 0) {
      *rc = bulk_fail(s->bytes, "poll: %s", strerror(errno));
      return -1;
    }
    if (ready > 0 && write_burst(s, rc) != 0) {
      return -1;
    }
    now = sys_mono_ms();
    if (bulk_clock_due(&s->clock, now)) {
      sample_now(s, "send");
    }
    if (now - s->last_progress_ms >= stall_ms) {
      *rc = bulk_fail(s->bytes, "stalled: the kernel took no byte for %d s",
                      s->o->stall_timeout_s);
      return -1;
    }
  }
  return 0;
}

/* After the last write: FIN / SHUTDOWN, then sample on until the peer has
 * acknowledged everything.  Wakes early when the peer closes (TCP: its FIN
 * after ours was acknowledged; SCTP: the association's end).  1 if all was
 * acknowledged within --drain-timeout (or the socket reports an error or
 * hang-up: the caller's SO_ERROR check and lingering close judge), 0 if
 * not, -1 on failure. */
static int drain_phase(struct sender *s, int *rc) {
  int64_t deadline = sys_mono_ms() + (int64_t)s->o->drain_timeout_s * 1000;
  short watch = POLLIN | POLLRDHUP;
  if (xp_shutdown_write(&s->c) != 0) {
    *rc = bulk_fail(s->bytes, "shutdown: %s", strerror(errno));
    return -1;
  }
  for (;;) {
    struct ss_sample sm;
    int known = ss_sample(&s->c, &sm) == 0;
    int64_t now = sys_mono_ms();
    int ready;
    if (known && bulk_clock_due(&s->clock, now)) {
      emit_sample(s, "drain", &sm);
    }
    if (!known || ss_all_acked(&s->c, &sm)) {
      return 1;
    }
    if (now >= deadline) {
      return 0;
    }
    ready = sys_wait_fd(s->c.fd, watch,
                        sys_ms_left(min64(s->clock.next_ms, deadline)));
    if (ready < 0) {
      *rc = bulk_fail(s->bytes, "poll: %s", strerror(errno));
      return -1;
    }
    if (ready > 0 && watch == 0) {
      return 1; /* POLLERR / POLLHUP, reported whatever is asked */
    }
    if (ready > 0) {
      watch = 0; /* woken once: from now on, only the sample clock */
    }
  }
}

static void emit_end(const struct sender *s, double t_end, double drain_s,
                     int confirmed) {
  struct event e;
  ev_begin(&e, "end");
  ev_u64(&e, "bytes", s->bytes);
  ev_num(&e, "duration_s", t_end - s->t_start);
  ev_num(&e, "drain_s", drain_s);
  ev_bool(&e, "delivered_confirmed", confirmed);
  ev_u64(&e, "backoffs", s->backoffs);
  xp_stack_end_fields(&e, s->o->proto, &s->o->xp);
  ev_end(&e);
}

/* Drain, check the socket's error, close lingering; the end event. */
static int finish(struct sender *s) {
  double t_end = sys_mono_now();
  int rc = 0;
  int acked = drain_phase(s, &rc);
  int err;
  int64_t left_s;
  if (acked < 0) {
    return rc;
  }
  err = xp_error(&s->c);
  if (err != 0) {
    return bulk_fail(s->bytes, "connection lost at the end: %s", strerror(err));
  }
  left_s = (int64_t)s->o->drain_timeout_s - (int64_t)(sys_mono_now() - t_end);
  if (xp_close_delivered(&s->c, (int)(left_s > 1 ? left_s : 1)) != 0) {
    acked = 0;
  }
  emit_end(s, t_end, sys_mono_now() - t_end, acked);
  if (!acked) {
    return bulk_fail(s->bytes, "not all data acknowledged within %d s",
                     s->o->drain_timeout_s);
  }
  return 0;
}

static int run(struct sender *s) {
  const struct bulkopts *o = s->o;
  double late_s, t_connect;
  int rc = 0;
  if (wait_for_start(o, &late_s) != 0) {
    return bulk_fail(0, "clock_nanosleep: %s", strerror(errno));
  }
  t_connect = sys_mono_now();
  if (xp_connect(o->proto, &o->addr, o->has_bind ? &o->bind_addr : NULL, &o->xp,
                 o->stall_timeout_s * 1000, &s->c) != 0) {
    return bulk_fail(0, "connect: %s", strerror(errno));
  }
  s->t_start = sys_mono_now();
  emit_connected(s, t_connect, late_s);
  s->last_progress_ms = sys_mono_ms();
  /* rounded up: the flow writes for at least --duration seconds */
  s->end_ms = (int64_t)((s->t_start + o->duration_s) * 1000.0) + 1;
  bulk_clock_start(&s->clock, s->last_progress_ms, o->sample_ms);
  if (send_phase(s, &rc) != 0) {
    return rc;
  }
  return finish(s);
}

int bulk_send(const struct bulkopts *o) {
  struct sender s;
  int rc;
  memset(&s, 0, sizeof s);
  s.o = o;
  s.c.fd = -1;
  s.payload = sys_malloc(o->write_size);
  fill_payload(s.payload, o->write_size);
  rc = run(&s);
  if (s.c.fd >= 0) {
    xp_abort(&s.c);
  }
  free(s.payload);
  return rc;
}
