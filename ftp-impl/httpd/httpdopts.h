/* httpdopts.h - the httpd command line, checked before anything starts. */
#ifndef FTP_HTTPDOPTS_H
#define FTP_HTTPDOPTS_H

#include <limits.h>
#include <stddef.h>

#include "httpmsg.h"
#include "transport.h"

struct httpd_opts {
  char root[PATH_MAX];     /* the served directory, resolved */
  const char *listen_tcp;  /* ADDR:PORT or "" */
  const char *listen_sctp; /* ADDR:PORT or "" */
  size_t write_size;       /* bytes per application write (SCTP: per message) */
  int max_requests;        /* per connection; the last answer says close */
  int idle_timeout_s;      /* between requests on a persistent connection */
  int header_timeout_s;    /* from a request's first byte to its blank line */
  int max_clients;         /* concurrent connections; 503 past it */
  int max_per_ip;     /* concurrent connections from one address; 503 past it */
  int max_sessions;   /* stop after this many connections ended (0: never) */
  const char *run_as; /* the user after the listeners are bound ("": nobody) */
  const char *log_path; /* access log (none or "-": stderr) */
  int cork;             /* TCP: pipelined answers corked */
  int access_log;       /* a log line per request */
  int round_robin;      /* SCTP: answers on different streams sent in turn */
  struct http_limits limits;
  struct xp_opts xp; /* streams offered, buffers, nodelay, io timeout */
};

extern struct httpd_opts httpd_opts;

/* Parse argv into httpd_opts; prints usage and exits 2 on any error. */
void httpd_opts_parse(int argc, char **argv);

#endif
