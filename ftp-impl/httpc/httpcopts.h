/* httpcopts.h - the httpc command line, checked before anything starts. */
#ifndef FTP_HTTPCOPTS_H
#define FTP_HTTPCOPTS_H

#include "addrparse.h"
#include "transport.h"

struct httpc_opts {
  enum xp_proto proto;
  struct addr server;
  int has_bind;
  struct addr bind_addr;
  const char *out_dir; /* where objects are saved ("/dev/null": counted only) */
  char host[300];      /* the Host header */
  int pipeline;        /* TCP: every object's request at once (default) */
  int timeout_s;       /* longest wait without progress; for a whole head */
  size_t max_head;     /* a response head, at most */
  struct xp_opts xp;   /* streams asked, buffers, nodelay */
  char **paths;        /* the document, then its embedded objects */
  int npaths;
};

/* Parse argv; prints usage and exits 2 on any error. */
void httpc_opts_parse(int argc, char **argv, struct httpc_opts *o);

#endif
