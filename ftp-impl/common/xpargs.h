/* xpargs.h - the transport options the programs share on their command
 * lines (struct xp_opts of transport.h): one name, one range and one field
 * each, parsed here for every program that takes them (cliparse.h). */
#ifndef FTP_XPARGS_H
#define FTP_XPARGS_H

#include <stddef.h>

#include "transport.h"

struct option;

/* The shared options, in the order a program's --help lists them. */
enum xpa_index {
  XPA_NODELAY,       /* --nodelay 0|1 */
  XPA_SACK_DELAY,    /* --sack-delay MS (0 to 500) */
  XPA_SACK_FREQ,     /* --sack-freq N (0 to 65535) */
  XPA_RTO_MIN,       /* --sctp-rto-min MS */
  XPA_RTO_INITIAL,   /* --sctp-rto-initial MS */
  XPA_RTO_MAX,       /* --sctp-rto-max MS */
  XPA_SNDBUF,        /* --sndbuf BYTES (1024 to 2^30) */
  XPA_RCVBUF,        /* --rcvbuf BYTES */
  XPA_MAXSEG,        /* --maxseg BYTES (64 to 65535) */
  XPA_STREAMS,       /* --streams N (1 to 65535) */
  XPA_IO_TIMEOUT,    /* --io-timeout S (1 to 86400) */
  XPA_ALSO_BIND,     /* --sctp-also-bind ADDR, up to XP_MAX_ALSO times */
  XPA_ALSO_PEER,     /* --sctp-also-peer ADDR, up to XP_MAX_ALSO times */
  XPA_SCTP_STACK,    /* --sctp-stack kernel|usrsctp */
  XPA_UDP_PORT,      /* --sctp-udp-port PORT: usrsctp's own UDP port */
  XPA_PEER_UDP_PORT, /* --sctp-peer-udp-port PORT: the peer's UDP port */
  XPA_USX_SYSCTL,    /* --usrsctp-sysctl NAME=VALUE, up to USX_MAX_SYSCTLS */
  XPA_COUNT
};

/* A set of them (a program's), and the getopt code of each. */
#define XPA_BIT(i) (1u << (i))
#define XPA_CODE(i) (0x1000 + (int)(i))
/* ftpd's and ftpc's socket knobs. */
#define XPA_SOCKET_KNOBS                                                       \
  (XPA_BIT(XPA_NODELAY) | XPA_BIT(XPA_SACK_DELAY) | XPA_BIT(XPA_SACK_FREQ) |   \
   XPA_BIT(XPA_RTO_MIN) | XPA_BIT(XPA_RTO_INITIAL) | XPA_BIT(XPA_RTO_MAX) |    \
   XPA_BIT(XPA_SNDBUF) | XPA_BIT(XPA_RCVBUF))

/* A server's: which stack, its own UDP port and its sysctls; the peer's UDP
 * port it learns from each association. */
#define XPA_SCTP_STACK_OWN                                                     \
  (XPA_BIT(XPA_SCTP_STACK) | XPA_BIT(XPA_UDP_PORT) | XPA_BIT(XPA_USX_SYSCTL))
/* SCTP multihoming: the further addresses of this end and of the peer. */
#define XPA_MULTIHOMING (XPA_BIT(XPA_ALSO_BIND) | XPA_BIT(XPA_ALSO_PEER))
/* The second SCTP stack (usx.h): which stack, usrsctp's UDP ports and its
 * sysctls. */
#define XPA_SCTP_STACKS                                                        \
  (XPA_BIT(XPA_SCTP_STACK) | XPA_BIT(XPA_UDP_PORT) |                           \
   XPA_BIT(XPA_PEER_UDP_PORT) | XPA_BIT(XPA_USX_SYSCTL))

/* The getopt entries of the options in `take`, written to out (at most cap
 * entries, in enum order).  Returns how many. */
size_t xpa_options(unsigned take, struct option *out, size_t cap);
/* Is code one of the shared options? */
int xpa_is(int code);
/* The value of the shared option code into its field of xp; a value out of
 * its range is a usage error (cliargs.h: exit 2). */
void xpa_set(int code, const char *arg, struct xp_opts *xp);
/* After parsing: the SCTP stack options agree with the protocol (usrsctp is
 * SCTP's; its UDP ports are usrsctp's); a usage error if not, naming what
 * the program takes to speak SCTP (sctp_needs, e.g. "--proto sctp"). */
void xpa_check_stack(int sctp, const char *sctp_needs,
                     const struct xp_opts *xp);
/* A connecting end on usrsctp that names no --sctp-peer-udp-port speaks to
 * USX_DEFAULT_UDP_PORT, set in xp so that its events record it as
 * applied. */
void xpa_default_peer_udp_port(struct xp_opts *xp);

/* The help lines of XPA_SCTP_STACKS for a program that connects to a
 * server. */
#define XPA_SCTP_STACKS_USAGE                                                  \
  "  --sctp-stack kernel|usrsctp   whose SCTP (default kernel); usrsctp\n"     \
  "                        speaks it inside UDP (RFC 6951)\n"                  \
  "  --sctp-udp-port PORT  usrsctp: its own UDP port (default 9899)\n"         \
  "  --sctp-peer-udp-port PORT   usrsctp: the server's UDP port (default\n"    \
  "                        9899)\n"                                            \
  "  --usrsctp-sysctl NAME=VALUE   usrsctp: one of its sysctls (repeated)\n"

#endif
