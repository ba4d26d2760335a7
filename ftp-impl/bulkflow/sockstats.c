/* sockstats.c - congestion state and settings as the kernel reports them
 * (see sockstats.h).  struct tcp_info comes from <linux/tcp.h>: glibc's copy
 * stops before tcpi_bytes_acked and tcpi_snd_wnd. */
#include "sockstats.h"

#include <linux/tcp.h>
#include <netinet/in.h>
#include <netinet/sctp.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>

#include "str.h"
#include "sysutil.h"
#include "usx.h"

/* Linux's TCP_INFINITE_SSTHRESH: no loss seen yet. */
#define SS_SSTHRESH_INFINITE 0x7fffffffu
/* tcpi_state values (include/net/tcp_states.h). */
enum { SS_TCP_FIN_WAIT2 = 5, SS_TCP_TIME_WAIT = 6, SS_TCP_CLOSE = 7 };

static void sample_unknown(struct ss_sample *s) {
  s->state = -1;
  s->cwnd = s->cwnd_segs = s->ssthresh = s->ssthresh_segs = -1;
  s->mss = s->srtt_us = s->rttvar_us = s->srtt_jiffies = s->rto_ms = -1;
  s->unacked = s->pending = s->peer_rwnd = s->retrans = s->lost = -1;
  s->bytes_acked = s->pmtu = -1;
}

/* TCP_INFO; *len says how much of the struct this kernel filled. */
static int tcp_info_get(int fd, struct tcp_info *ti, socklen_t *len) {
  memset(ti, 0, sizeof *ti);
  *len = sizeof *ti;
  return getsockopt(fd, IPPROTO_TCP, TCP_INFO, ti, len);
}

#define TI_HAS(len, field)                                                     \
  ((size_t)(len) >=                                                            \
   offsetof(struct tcp_info, field) + sizeof(((struct tcp_info *)0)->field))

static int tcp_sample(int fd, struct ss_sample *s) {
  struct tcp_info ti;
  socklen_t len;
  if (tcp_info_get(fd, &ti, &len) != 0 || !TI_HAS(len, tcpi_total_retrans)) {
    return -1;
  }
  s->state = ti.tcpi_state;
  s->mss = ti.tcpi_snd_mss;
  s->cwnd_segs = ti.tcpi_snd_cwnd;
  s->cwnd = (int64_t)ti.tcpi_snd_cwnd * ti.tcpi_snd_mss;
  if (ti.tcpi_snd_ssthresh < SS_SSTHRESH_INFINITE) {
    s->ssthresh_segs = ti.tcpi_snd_ssthresh;
    s->ssthresh = (int64_t)ti.tcpi_snd_ssthresh * ti.tcpi_snd_mss;
  }
  s->srtt_us = ti.tcpi_rtt;
  s->rttvar_us = ti.tcpi_rttvar;
  s->rto_ms = ti.tcpi_rto / 1000;
  s->unacked = ti.tcpi_unacked;
  s->retrans = ti.tcpi_total_retrans;
  s->lost = ti.tcpi_lost;
  s->pmtu = ti.tcpi_pmtu;
  if (TI_HAS(len, tcpi_bytes_acked)) {
    s->bytes_acked = (int64_t)ti.tcpi_bytes_acked;
  }
  if (TI_HAS(len, tcpi_snd_wnd)) {
    s->peer_rwnd = ti.tcpi_snd_wnd;
  }
  return 0;
}

static int sctp_status_get(int fd, struct sctp_status *st) {
  socklen_t len = sizeof *st;
  memset(st, 0, sizeof *st);
  return getsockopt(fd, IPPROTO_SCTP, SCTP_STATUS, st, &len);
}

static int sctp_stats_get(int fd, struct sctp_assoc_stats *as) {
  socklen_t len = sizeof *as;
  memset(as, 0, sizeof *as);
  return getsockopt(fd, IPPROTO_SCTP, SCTP_GET_ASSOC_STATS, as, &len);
}

static int sctp_sample(int fd, struct ss_sample *s) {
  struct sctp_status st;
  struct sctp_assoc_stats as;
  if (sctp_status_get(fd, &st) != 0) {
    return -1;
  }
  s->state = st.sstat_state;
  s->cwnd = st.sstat_primary.spinfo_cwnd;
  s->srtt_jiffies = st.sstat_primary.spinfo_srtt;
  s->rto_ms = st.sstat_primary.spinfo_rto;
  s->pmtu = st.sstat_primary.spinfo_mtu;
  s->unacked = st.sstat_unackdata;
  s->pending = st.sstat_penddata;
  s->peer_rwnd = st.sstat_rwnd;
  if (sctp_stats_get(fd, &as) == 0) {
    s->retrans = (int64_t)as.sas_rtxchunks;
  }
  return 0;
}

/* usrsctp's states as Linux numbers them (enum sctp_sstat_state), so that
 * a sample's state means the same on either stack. */
static int linux_state(enum usx_state st) {
  switch (st) {
  case USX_COOKIE_WAIT: return SCTP_COOKIE_WAIT;
  case USX_COOKIE_ECHOED: return SCTP_COOKIE_ECHOED;
  case USX_ESTABLISHED: return SCTP_ESTABLISHED;
  case USX_SHUTDOWN_PENDING: return SCTP_SHUTDOWN_PENDING;
  case USX_SHUTDOWN_SENT: return SCTP_SHUTDOWN_SENT;
  case USX_SHUTDOWN_RECEIVED: return SCTP_SHUTDOWN_RECEIVED;
  case USX_SHUTDOWN_ACK_SENT: return SCTP_SHUTDOWN_ACK_SENT;
  default: return SCTP_CLOSED;
  }
}

/* usrsctp reports its primary path's srtt in milliseconds (no rttvar) and
 * no retransmission count. */
static int usrsctp_sample(int fd, struct ss_sample *s) {
  struct usx_status st;
  if (usx_status(fd, &st) != 0) {
    return -1;
  }
  s->state = linux_state(st.state);
  s->cwnd = st.cwnd;
  s->srtt_us = st.srtt_ms * 1000;
  s->rto_ms = st.rto_ms;
  s->pmtu = st.mtu;
  s->unacked = st.unacked;
  s->pending = st.pending;
  s->peer_rwnd = st.peer_rwnd;
  return 0;
}

int ss_sample(const struct xp_conn *c, struct ss_sample *s) {
  sample_unknown(s);
  if (usx_is(c->fd)) {
    return usrsctp_sample(c->fd, s);
  }
  return c->proto == XP_TCP ? tcp_sample(c->fd, s) : sctp_sample(c->fd, s);
}

int ss_all_acked(const struct xp_conn *c, const struct ss_sample *s) {
  if (c->proto == XP_TCP) {
    return s->state == SS_TCP_FIN_WAIT2 || s->state == SS_TCP_TIME_WAIT ||
           s->state == SS_TCP_CLOSE;
  }
  return s->state >= SCTP_SHUTDOWN_SENT && s->state != SCTP_SHUTDOWN_RECEIVED;
}

/* An integer field, or null when unknown (< 0). */
static void field(struct event *e, const char *key, int64_t v) {
  if (v < 0) {
    ev_null(e, key);
  } else {
    ev_int(e, key, v);
  }
}

void ss_sample_fields(struct event *e, const struct ss_sample *s) {
  field(e, "cwnd", s->cwnd);
  field(e, "cwnd_segs", s->cwnd_segs);
  field(e, "ssthresh", s->ssthresh);
  field(e, "ssthresh_segs", s->ssthresh_segs);
  field(e, "mss", s->mss);
  if (s->srtt_us >= 0) {
    ev_num(e, "srtt_ms", (double)s->srtt_us / 1000.0);
  } else {
    ev_null(e, "srtt_ms");
  }
  if (s->rttvar_us >= 0) {
    ev_num(e, "rttvar_ms", (double)s->rttvar_us / 1000.0);
  } else {
    ev_null(e, "rttvar_ms");
  }
  field(e, "srtt_jiffies", s->srtt_jiffies);
  field(e, "rto_ms", s->rto_ms);
  field(e, "unacked", s->unacked);
  field(e, "pending", s->pending);
  field(e, "peer_rwnd", s->peer_rwnd);
  field(e, "retrans", s->retrans);
  field(e, "lost", s->lost);
  field(e, "bytes_acked", s->bytes_acked);
  field(e, "pmtu", s->pmtu);
  field(e, "state", s->state);
}

static int64_t sockopt_or_unknown(int fd, int level, int opt) {
  int v;
  return sys_getsockopt_int(fd, level, opt, &v) == 0 ? v : -1;
}

static int64_t sctp_maxseg(int fd) {
  struct sctp_assoc_value av;
  socklen_t len = sizeof av;
  memset(&av, 0, sizeof av);
  if (getsockopt(fd, IPPROTO_SCTP, SCTP_MAXSEG, &av, &len) != 0) {
    return -1;
  }
  return av.assoc_value;
}

static void tcp_settings(struct event *e, int fd) {
  struct tcp_info ti;
  socklen_t len;
  int ok = tcp_info_get(fd, &ti, &len) == 0 && TI_HAS(len, tcpi_advmss);
  field(e, "maxseg", sockopt_or_unknown(fd, IPPROTO_TCP, TCP_MAXSEG));
  field(e, "nodelay", sockopt_or_unknown(fd, IPPROTO_TCP, TCP_NODELAY));
  field(e, "window_clamp",
        sockopt_or_unknown(fd, IPPROTO_TCP, TCP_WINDOW_CLAMP));
  if (ok) {
    ev_bool(e, "sack", (ti.tcpi_options & TCPI_OPT_SACK) != 0);
    ev_bool(e, "timestamps", (ti.tcpi_options & TCPI_OPT_TIMESTAMPS) != 0);
    field(e, "snd_wscale",
          (ti.tcpi_options & TCPI_OPT_WSCALE) != 0 ? ti.tcpi_snd_wscale : -1);
    field(e, "rcv_wscale",
          (ti.tcpi_options & TCPI_OPT_WSCALE) != 0 ? ti.tcpi_rcv_wscale : -1);
    field(e, "advmss", ti.tcpi_advmss);
    field(e, "peer_rwnd",
          TI_HAS(len, tcpi_snd_wnd) ? (int64_t)ti.tcpi_snd_wnd : -1);
  } else {
    ev_null(e, "sack");
    ev_null(e, "timestamps");
    ev_null(e, "snd_wscale");
    ev_null(e, "rcv_wscale");
    ev_null(e, "advmss");
    ev_null(e, "peer_rwnd");
  }
  ev_null(e, "sack_delay_ms");
  ev_null(e, "sack_freq");
  ev_null(e, "streams_in");
  ev_null(e, "streams_out");
}

/* The settings only TCP has, null for SCTP. */
static void tcp_only_null(struct event *e) {
  ev_null(e, "window_clamp");
  ev_null(e, "sack");
  ev_null(e, "timestamps");
  ev_null(e, "snd_wscale");
  ev_null(e, "rcv_wscale");
  ev_null(e, "advmss");
}

static void sctp_settings(struct event *e, int fd) {
  struct sctp_status st;
  struct sctp_sack_info si;
  socklen_t len = sizeof si;
  int have_st = sctp_status_get(fd, &st) == 0;
  field(e, "maxseg", sctp_maxseg(fd));
  field(e, "nodelay", sockopt_or_unknown(fd, IPPROTO_SCTP, SCTP_NODELAY));
  tcp_only_null(e);
  field(e, "peer_rwnd", have_st ? (int64_t)st.sstat_rwnd : -1);
  memset(&si, 0, sizeof si);
  if (getsockopt(fd, IPPROTO_SCTP, SCTP_DELAYED_SACK, &si, &len) == 0) {
    ev_int(e, "sack_delay_ms", si.sack_delay);
    ev_int(e, "sack_freq", si.sack_freq);
  } else {
    ev_null(e, "sack_delay_ms");
    ev_null(e, "sack_freq");
  }
  field(e, "streams_in", have_st ? st.sstat_instrms : -1);
  field(e, "streams_out", have_st ? st.sstat_outstrms : -1);
}

static void usrsctp_settings(struct event *e, int fd) {
  struct usx_settings us;
  struct usx_status st;
  int have_st = usx_status(fd, &st) == 0;
  usx_settings(fd, &us);
  field(e, "sndbuf", us.sndbuf);
  field(e, "rcvbuf", us.rcvbuf);
  field(e, "maxseg", us.maxseg);
  field(e, "nodelay", us.nodelay);
  tcp_only_null(e);
  field(e, "peer_rwnd", have_st ? st.peer_rwnd : -1);
  field(e, "sack_delay_ms", us.sack_delay_ms);
  field(e, "sack_freq", us.sack_freq);
  field(e, "streams_in", have_st ? st.streams_in : -1);
  field(e, "streams_out", have_st ? st.streams_out : -1);
}

void ss_settings_fields(struct event *e, const struct xp_conn *c) {
  if (usx_is(c->fd)) {
    usrsctp_settings(e, c->fd);
    return;
  }
  field(e, "sndbuf", sockopt_or_unknown(c->fd, SOL_SOCKET, SO_SNDBUF));
  field(e, "rcvbuf", sockopt_or_unknown(c->fd, SOL_SOCKET, SO_RCVBUF));
  if (c->proto == XP_TCP) {
    tcp_settings(e, c->fd);
  } else {
    sctp_settings(e, c->fd);
  }
}

int ss_recv_counts(const struct xp_conn *c, struct ss_counts *k) {
  k->data_in = k->acks_out = -1;
  if (usx_is(c->fd)) {
    return -1; /* usrsctp keeps no per-association counts */
  }
  if (c->proto == XP_TCP) {
    struct tcp_info ti;
    socklen_t len;
    if (tcp_info_get(c->fd, &ti, &len) != 0 ||
        !TI_HAS(len, tcpi_data_segs_in)) {
      return -1;
    }
    k->data_in = ti.tcpi_data_segs_in;
    k->acks_out = ti.tcpi_segs_out;
  } else {
    struct sctp_assoc_stats as;
    if (sctp_stats_get(c->fd, &as) != 0) {
      return -1;
    }
    k->data_in = (int64_t)(as.sas_iodchunks + as.sas_iuodchunks);
    k->acks_out = (int64_t)as.sas_osacks;
  }
  return 0;
}

void ss_counts_fields(struct event *e, const struct ss_counts *k) {
  field(e, "data_in", k->data_in);
  field(e, "acks_out", k->acks_out);
}

int64_t ss_rcvbuf(const struct xp_conn *c) {
  struct usx_settings us;
  if (usx_is(c->fd)) {
    usx_settings(c->fd, &us);
    return us.rcvbuf;
  }
  return sockopt_or_unknown(c->fd, SOL_SOCKET, SO_RCVBUF);
}
