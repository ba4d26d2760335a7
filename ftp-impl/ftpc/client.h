/* client.h - the state of one ftpc session, shared by the command driver
 * (ftpc.c), the failure helpers (clientfail.c), the classic data-connection
 * transfers (xfer.c), the pipelined engine (msxfer.c) and the block-mode data
 * connection (blockdata.c). */
#ifndef FTP_CLIENT_H
#define FTP_CLIENT_H

#include "addrparse.h"
#include "clientopts.h"
#include "ctrlconn.h"
#include "str.h"

struct client {
  struct copts *o;
  struct ctrlconn cc;
  enum xp_proto proto;
  struct addr server; /* control peer */
  int timeout_ms;
  double t_nlst_150; /* first 150 reply to NLST (0: none yet) */
  double t_last_226; /* latest 226 reply */
  char last_226_cmd[16];
  char error[512];     /* why the session failed */
  int refused;         /* the last failed transfer got 550 before any data */
  size_t skipped;      /* names an mget skipped (refused with 550) */
  struct xp_conn data; /* tcp-pipelined: the one block-mode data connection
                        * of the session (fd -1 until opened) */
};

/* Failure helper (clientfail.c): set cl->error, return -1. */
int client_fail(struct client *cl, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* mget (clientfail.c): report a name the server refused with 550 (a `skipped`
 * event), count it and clear cl->error: the session goes on. */
void client_skip(struct client *cl, const char *name);

/* Classic FTP (tcp, sctp-naive): one data connection per transfer. */
int xfer_list(struct client *cl, const char *cmd, const char *arg,
              struct buf *out);
int xfer_get(struct client *cl, const char *remote);
int xfer_put(struct client *cl, const char *local);
/* PASV (IPv4) or EPSV, and connect to the control peer's address. */
int xfer_passive(struct client *cl, struct xp_conn *conn);

/* The replies to one transfer command (xfer.c, xftpget.c): its 1xx with the
 * byte count it announced, then its final reply. */
struct xfer_replies {
  const char *cmd;
  const char *arg;
  int64_t announced; /* "(N bytes)" of the 150, -1 if none */
  int prelim;        /* 1xx seen */
  int final_code;    /* 0 until the final reply */
  char final_text[512];
};
/* Take the transfer's replies that have arrived, without waiting: -1 (and
 * cl->error) on a failure or a final reply of 300 or more. */
int xfer_take_replies(struct client *cl, struct xfer_replies *t);

/* The pipelined engine (msxfer.c): sctp-ms and sctp-ms-cp with data on
 * stream 1 of the association, tcp-pipelined with data in blocks on
 * cl->data. */
int ms_list(struct client *cl, const char *cmd, const char *arg,
            struct buf *out);
/* SIZE then RETR for each name; pipelined = sctp-ms-cp; skip: a 550 to
 * SIZE or RETR (before any data) skips the name instead of failing. */
int ms_get(struct client *cl, char **names, size_t n, int pipelined, int skip);
int ms_put(struct client *cl, const char *local);

/* The xftp variant (xftpget.c): MODE E over parallel TCP connections that
 * the server opens; xftp_setup sends MODE E and the parallelism at login. */
int xftp_setup(struct client *cl);
int xftp_list(struct client *cl, const char *cmd, const char *arg,
              struct buf *out);
int xftp_get(struct client *cl, const char *remote);

#endif
