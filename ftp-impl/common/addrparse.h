/* addrparse.h - parsing and formatting of network addresses: command-line
 * HOST:PORT, the PORT/EPRT arguments and the PASV/EPSV replies. */
#ifndef FTP_ADDRPARSE_H
#define FTP_ADDRPARSE_H

#include <stddef.h>
#include <sys/socket.h>

struct addr {
  struct sockaddr_storage ss;
  socklen_t len;
};

/* "1.2.3.4:21", "[::1]:21", "name:21" or "name" (default_port). */
int addr_parse_hostport(const char *s, int default_port, struct addr *out);
/* PORT argument "h1,h2,h3,h4,p1,p2". */
int addr_parse_port_arg(const char *arg, struct addr *out);
/* EPRT argument "|1|1.2.3.4|5282|" or "|2|::1|5282|". */
int addr_parse_eprt_arg(const char *arg, struct addr *out);
/* PORT argument / 227 text for an IPv4 address: "h1,h2,h3,h4,p1,p2". */
int addr_fmt_port_arg(const struct addr *a, char *dst, size_t cap);
/* EPRT argument for any address: "|1|1.2.3.4|5282|". */
int addr_fmt_eprt_arg(const struct addr *a, char *dst, size_t cap);
/* Find "h1,h2,h3,h4,p1,p2" in a 227 reply text. */
int addr_parse_227(const char *text, struct addr *out);
/* Find "(|||port|)" in a 229 reply text. */
int addr_parse_229(const char *text, int *port);

int addr_port(const struct addr *a);
void addr_set_port(struct addr *a, int port);
/* Same IP address (ports ignored)?  v4-mapped v6 equals its v4 form. */
int addr_same_host(const struct addr *a, const struct addr *b);
/* "1.2.3.4:21" or "[::1]:21". */
int addr_to_str(const struct addr *a, char *dst, size_t cap);
/* Just the IP as text. */
int addr_ip_str(const struct addr *a, char *dst, size_t cap);

#endif
