/* usxmtu.h - what usrsctp is told of the kernel's routes: the path MTU a
 * usrsctp socket is given (usxsock.c), and the source address that stands
 * for an association's end (usxio.c).
 *
 * usrsctp 0.9.5.0 takes 1500 bytes for every route (sctp_os_userspace.h:
 * "FIXME temporary solution"), less the UDP header, whatever the link:
 * on the testbed's 1,548-byte links a 1,488-byte payload left in 1,444-byte
 * chunks.  The kernel's SCTP reads the route's MTU; these read the same. */
#ifndef FTP_USXMTU_H
#define FTP_USXMTU_H

#include "addrparse.h"

/* The MTU of the kernel's route towards dst, or -1 if it has none. */
int usx_mtu_towards(const struct addr *dst);
/* The MTU of the interface that holds the address a (a listener's), or -1
 * for a wildcard address or one no interface holds. */
int usx_mtu_of_local(const struct addr *a);
/* The source address of the kernel's route towards dst (port 0): 0, or -1
 * if it has none.  usrsctp lists every address of the host as the end of an
 * association bound to none, the loopback's and other links' first; the
 * route's is the one the peer reaches (an FTP client's PORT). */
int usx_route_source(const struct addr *dst, struct addr *src);
/* What usrsctp's SCTP_PEER_ADDR_PARAMS spp_pathmtu takes for an IP packet
 * of `mtu` bytes carrying SCTP over UDP: the bytes of chunks it holds. */
int usx_chunk_room(int mtu, int family);

#endif
