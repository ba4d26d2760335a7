/* httpc.c - an HTTP/1.1 client for the web study (E4): fetches a page (a
 * document, then its embedded objects) over TCP or over SCTP streams and
 * writes one JSON event per step.  See ftp-impl/PROGRAMS.md. */
#include "httpcopts.h"
#include "httpget.h"
#include "sysutil.h"

int main(int argc, char **argv) {
  struct httpc_opts o;
  sys_set_progname("httpc");
  httpc_opts_parse(argc, argv, &o);
  sys_ignore_sigpipe();
  return http_get_page(&o);
}
