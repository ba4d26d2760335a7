/* tunables.h - every setting of the server, with its default, in one place. */
#ifndef FTP_TUNABLES_H
#define FTP_TUNABLES_H

#include <limits.h>

#include "transport.h"

struct tunables {
  char root[PATH_MAX];     /* --root: real path of the served tree */
  char tcp_listen[128];    /* --tcp ADDR:PORT ("" = no TCP listener) */
  char sctp_listen[128];   /* --sctp ADDR:PORT ("" = no SCTP listener) */
  char log_file[PATH_MAX]; /* --log FILE ("" = stderr) */
  char user[64];           /* --user NAME:PASS (a named account) */
  char run_as[64];         /* --run-as USER ("" = nobody when root) */
  char pass[64];
  int anon_enable;          /* anonymous login (default on) */
  int allow_upload;         /* STOR allowed (default off) */
  int max_clients;          /* concurrent sessions (default 64) */
  int max_per_ip;           /* concurrent sessions from one address (16) */
  int max_sessions;         /* exit after this many sessions (0: never) */
  int idle_timeout_s;       /* control connection idle limit (300) */
  int data_timeout_s;       /* data stall and delivery limit (60) */
  int reply_on_close;       /* 226 once close() returns, unacknowledged (0) */
  int open_timeout_s;       /* data accept/connect limit (190) */
  int max_line;             /* longest command line accepted (1024) */
  unsigned chunk;           /* SCTP data message size (65536) */
  unsigned max_parallel;    /* MODE E connections one transfer may use (16) */
  size_t max_listing;       /* largest listing built (16 MB) */
  struct xp_opts ctrl_opts; /* socket options of control connections */
  struct xp_opts data_opts; /* socket options of data connections */
};

extern struct tunables tunables;

void tunables_defaults(void);
/* Parse the ftpd command line; on error print usage and exit(2). */
void tunables_parse_args(int argc, char **argv);

#endif
