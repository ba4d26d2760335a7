/* ctrlconn.h - the client's control connection: queues commands, sends
 * them (several in one message when pipelining), parses replies (multi-line
 * too) in the order they arrive and labels each with the command it
 * answers.  In multistream mode stream-1 bytes arriving on the same
 * association are handed to a data callback. */
#ifndef FTP_CTRLCONN_H
#define FTP_CTRLCONN_H

#include <stddef.h>

#include "addrparse.h"
#include "str.h"
#include "transport.h"

struct reply {
  int code;
  char text[512]; /* text of the last line */
  char cmd[16];   /* command answered ("" for the greeting) */
  char arg[256];
  double t; /* arrival, CLOCK_MONOTONIC seconds */
};

struct pending {
  char cmd[16];
  char arg[256];
};

/* Stream-1 bytes (multistream): bytes, end-of-record, arrival time. */
typedef void (*data_fn)(void *ctx, const char *p, size_t n, int eor, double t);

struct ctrlconn {
  struct xp_conn c;
  struct buf in;        /* stream-0 bytes not yet parsed */
  struct buf out;       /* commands queued, not yet sent */
  struct pending *pend; /* commands sent, final reply not yet seen */
  size_t pend_head, pend_len, pend_cap;
  struct reply *rq; /* parsed replies not yet taken */
  size_t rq_head, rq_len, rq_cap;
  int multi_code;       /* inside a multi-line reply */
  unsigned multi_lines; /* lines of it so far (at most MAX_REPLY_LINES) */
  data_fn on_data;
  void *data_ctx;
  void (*on_reply)(void *ctx, const struct reply *r); /* every reply */
  void *reply_ctx;
  int timeout_ms;
  char *chunk;     /* receive buffer (RECV_CHUNK bytes) */
  char error[256]; /* why the last call failed */
};

/* Connect to dst, from local address src (port 0) unless src is NULL. */
int ctrl_open(struct ctrlconn *cc, enum xp_proto p, const struct addr *dst,
              const struct addr *src, const struct xp_opts *o, int timeout_ms);
void ctrl_close(struct ctrlconn *cc);
/* Queue "CMD ARG\r\n" (emits a "command" event); ctrl_flush sends. */
int ctrl_queue(struct ctrlconn *cc, const char *cmd, const char *arg);
int ctrl_flush(struct ctrlconn *cc);
int ctrl_send(struct ctrlconn *cc, const char *cmd, const char *arg);
/* Receive once (waits up to timeout_ms).  1 progress, -1 error (cc->error);
 * with timeout_ms 0 (a poll said readable), 0 when nothing was there. */
int ctrl_pump(struct ctrlconn *cc, int timeout_ms);
/* Parsed replies waiting. */
int ctrl_has_reply(const struct ctrlconn *cc);
/* Next reply, receiving as needed.  -1 on error/timeout (cc->error). */
int ctrl_reply(struct ctrlconn *cc, struct reply *r);
/* Byte count of a 150 text: the "(N bytes)" group that ends it, before at
 * most one final '.', and not part of the echo of name (the transfer's
 * argument: "f (3 bytes)" echoed with no count has none); -1 if absent. */
int ctrl_reply_bytes(const struct reply *r, const char *name,
                     unsigned long long *n);

#endif
