/* session.h - the state of one control connection in the server, read and
 * written by every part of a session; its life and its command loop are
 * sessionloop.c's. */
#ifndef FTP_SESSION_H
#define FTP_SESSION_H

#include <limits.h>
#include <stdint.h>

#include "addrparse.h"
#include "str.h"
#include "transport.h"

/* Stream ids in multistream mode (PROTOCOL.md). */
#define SID_CTRL 0u
#define SID_DATA 1u

struct session {
  struct xp_conn ctrl;
  struct addr peer;  /* control peer: the only data destination */
  struct addr local; /* our end of the control connection */
  int logged_in;
  int user_ok; /* USER accepted, waiting for PASS */
  int user_anon;
  char user[64];
  int multistream; /* OPTS MSTREAM ON accepted */
  int block_mode;  /* MODE B: RFC 959 blocks on one persistent connection */
  struct xp_conn pdata; /* MODE B: the data connection kept open (fd -1) */
  int ext_mode;         /* MODE E: blocks over parallel data connections */
  unsigned parallel;    /* OPTS RETR Parallelism: MODE E connections (1) */
  int type_ascii;
  char cwd[PATH_MAX]; /* virtual path, always starts with '/' */
  uint64_t rest;      /* REST offset for the next transfer */
  uint64_t allo;      /* ALLO byte count for the next MS STOR */
  int allo_set;
  int pasv_fd;           /* listening data socket after PASV/EPSV */
  struct addr port_addr; /* target after PORT/EPRT */
  int port_set;
  struct buf in;  /* control bytes received, not yet parsed */
  int discarding; /* inside an overlong line */
  int quit;       /* end the session after this command */
  int aborted;    /* ABOR arrived during the transfer in progress */
  int open_late;  /* no data connection within the open limit */
  uint64_t transfers;
};

#endif
