/* sockstats.h - what the kernel reports about one connection: its
 * congestion state (sampled while sending), the settings it holds (read back
 * after they were applied) and a receiver's packet counts.  TCP from
 * TCP_INFO and getsockopt; SCTP from SCTP_STATUS (whose sstat_primary is the
 * struct sctp_paddrinfo SCTP_GET_PEER_ADDR_INFO gives for the primary path,
 * in one call), SCTP_GET_ASSOC_STATS and getsockopt.  Each writes its fields
 * into an event; a field the protocol cannot report is null.  The schema is
 * in ftp-impl/EVENTS.md. */
#ifndef FTP_SOCKSTATS_H
#define FTP_SOCKSTATS_H

#include <stdint.h>

#include "events.h"
#include "transport.h"

/* -1 in any field: not known for this protocol (written as null). */
struct ss_sample {
  int state;             /* TCP tcpi_state / SCTP sstat_state */
  int64_t cwnd;          /* bytes */
  int64_t cwnd_segs;     /* TCP tcpi_snd_cwnd */
  int64_t ssthresh;      /* bytes (TCP: segments x MSS; null until a loss) */
  int64_t ssthresh_segs; /* TCP tcpi_snd_ssthresh */
  int64_t mss;           /* TCP tcpi_snd_mss */
  int64_t srtt_us;       /* TCP tcpi_rtt */
  int64_t rttvar_us;     /* TCP tcpi_rttvar */
  int64_t srtt_jiffies;  /* SCTP spinfo_srtt: Linux 6.1 reports jiffies */
  int64_t rto_ms;        /* TCP tcpi_rto / SCTP spinfo_rto */
  int64_t unacked;       /* TCP segments (tcpi_unacked) / SCTP DATA chunks */
  int64_t pending;       /* SCTP sstat_penddata */
  int64_t peer_rwnd;     /* TCP tcpi_snd_wnd / SCTP sstat_rwnd, bytes */
  int64_t retrans;       /* TCP tcpi_total_retrans / SCTP sas_rtxchunks */
  int64_t lost;          /* TCP tcpi_lost */
  int64_t bytes_acked;   /* TCP tcpi_bytes_acked */
  int64_t pmtu;          /* TCP tcpi_pmtu / SCTP spinfo_mtu */
};

/* Sample the congestion state.  -1 if the kernel no longer knows the
 * connection (an SCTP association that has ended). */
int ss_sample(const struct xp_conn *c, struct ss_sample *s);
/* After xp_shutdown_write: has the peer acknowledged everything sent (TCP:
 * our FIN; SCTP: the data, so the SHUTDOWN went out)? */
int ss_all_acked(const struct xp_conn *c, const struct ss_sample *s);
void ss_sample_fields(struct event *e, const struct ss_sample *s);
/* The settings the kernel holds for the connection, read back. */
void ss_settings_fields(struct event *e, const struct xp_conn *c);
/* A receiver's counts: data segments / DATA chunks in, segments / SACK
 * chunks out (-1: not known).  SCTP's vanish with the association, so a
 * receiver reads them while it runs. */
struct ss_counts {
  int64_t data_in;
  int64_t acks_out;
};
int ss_recv_counts(const struct xp_conn *c, struct ss_counts *k);
/* The receive buffer the socket holds, or -1. */
int64_t ss_rcvbuf(const struct xp_conn *c);
void ss_counts_fields(struct event *e, const struct ss_counts *k);

#endif
