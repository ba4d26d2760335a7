/* clientopts.h - the ftpc command line. */
#ifndef FTP_CLIENTOPTS_H
#define FTP_CLIENTOPTS_H

#include <limits.h>

#include "transport.h"

enum variant {
  V_TCP,
  V_SCTP_NAIVE,
  V_SCTP_MS,
  V_SCTP_MS_CP,
  V_TCP_PIPELINED,
  V_XFTP
};

struct copts {
  enum variant variant;
  char variant_name[16];
  char host[256]; /* HOST[:PORT] as given */
  char out_dir[PATH_MAX];
  char user[64];
  char pass[64];
  int active;        /* PORT/EPRT instead of PASV/EPSV */
  int timeout_s;     /* longest wait without progress */
  int open_s;        /* open limit: a transfer's command to its 1xx */
  int retries;       /* new data connections after a failed opening */
  unsigned chunk;    /* MS upload message size */
  unsigned parallel; /* xftp: data connections per transfer */
  struct xp_opts xp;
  int has_bind;          /* --bind given */
  struct addr bind_addr; /* local address (port 0) of every connection */
  char **cmds;           /* COMMAND ARGS... (argv tail) */
  int ncmds;
};

/* The command line; a usage error (an unknown option, a bad value, an
 * option after HOST, an unknown command or one without its argument)
 * exits 2 before anything connects. */
void copts_parse(int argc, char **argv, struct copts *o);
/* Is word one of the commands (ls dir get mget put)? */
int copts_is_command(const char *word);
/* The local address to bind connections and listeners to, or NULL. */
const struct addr *copts_bind(const struct copts *o);
/* The variant uses SCTP / streams? */
int copts_sctp(const struct copts *o);
int copts_ms(const struct copts *o);
/* tcp-pipelined: MODE B on one persistent TCP data connection. */
int copts_block(const struct copts *o);
/* xftp: MODE E over --parallel TCP connections per transfer. */
int copts_xftp(const struct copts *o);
/* The variant sends SIZE for every file at once and RETRs as they come. */
int copts_pipelined(const struct copts *o);

#endif
