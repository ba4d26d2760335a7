/* usxmtu.c - what usrsctp is told of the kernel's routes (usxmtu.h). */
#define _GNU_SOURCE
#include "usxmtu.h"

#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sysutil.h"

#define IPV4_HEADER 20
#define IPV6_HEADER 40
#define UDP_HEADER 8
#define SCTP_COMMON_HEADER 12

int usx_mtu_towards(const struct addr *dst) {
  int mtu = -1;
  socklen_t len = (socklen_t)sizeof mtu;
  int family = dst->ss.ss_family;
  int level = family == AF_INET6 ? IPPROTO_IPV6 : IPPROTO_IP;
  int opt = family == AF_INET6 ? IPV6_MTU : IP_MTU;
  /* a connected UDP socket holds the route; connecting sends nothing */
  int fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return -1;
  }
  if (connect(fd, (const struct sockaddr *)(const void *)&dst->ss, dst->len) !=
          0 ||
      getsockopt(fd, level, opt, &mtu, &len) != 0) {
    mtu = -1;
  }
  sys_close(fd);
  return mtu;
}

int usx_route_source(const struct addr *dst, struct addr *src) {
  int rc = -1;
  int fd = socket(dst->ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return -1;
  }
  memset(src, 0, sizeof *src);
  src->len = (socklen_t)sizeof src->ss;
  if (connect(fd, (const struct sockaddr *)(const void *)&dst->ss, dst->len) ==
          0 &&
      getsockname(fd, (struct sockaddr *)(void *)&src->ss, &src->len) == 0) {
    addr_set_port(src, 0);
    rc = 0;
  }
  sys_close(fd);
  return rc;
}

static int same_host(const struct sockaddr *ifa, const struct addr *a) {
  if (ifa == NULL || ifa->sa_family != a->ss.ss_family) {
    return 0;
  }
  if (ifa->sa_family == AF_INET) {
    const struct sockaddr_in *x = (const void *)ifa;
    const struct sockaddr_in *y = (const void *)&a->ss;
    return x->sin_addr.s_addr == y->sin_addr.s_addr;
  }
  if (ifa->sa_family == AF_INET6) {
    const struct sockaddr_in6 *x = (const void *)ifa;
    const struct sockaddr_in6 *y = (const void *)&a->ss;
    return memcmp(&x->sin6_addr, &y->sin6_addr, sizeof x->sin6_addr) == 0;
  }
  return 0;
}

static int mtu_of_interface(const char *name) {
  struct ifreq ifr;
  int mtu = -1;
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return -1;
  }
  memset(&ifr, 0, sizeof ifr);
  if (strlen(name) < sizeof ifr.ifr_name) {
    memcpy(ifr.ifr_name, name, strlen(name) + 1);
    if (ioctl(fd, SIOCGIFMTU, &ifr) == 0) {
      mtu = ifr.ifr_mtu;
    }
  }
  sys_close(fd);
  return mtu;
}

int usx_mtu_of_local(const struct addr *a) {
  struct ifaddrs *all, *i;
  int mtu = -1;
  if (getifaddrs(&all) != 0) {
    return -1;
  }
  for (i = all; i != NULL && mtu < 0; i = i->ifa_next) {
    if (same_host(i->ifa_addr, a)) {
      mtu = mtu_of_interface(i->ifa_name);
    }
  }
  freeifaddrs(all);
  return mtu;
}

/* usrsctp 0.9.5.0 loses SCTP packets of about 64 KB inside UDP: on the
 * loopback (MTU 65,536) a flow of 64 KB messages stalled after its first
 * 256 KB with any MTU told from 64,000 up (only each message's last fragment
 * left) and ran with 60,000 and below.  The MTU it is told is therefore at
 * most a jumbo frame's; the testbed's links are all below it. */
#define USX_MTU_MAX 9000

int usx_chunk_room(int mtu, int family) {
  int ip = family == AF_INET6 ? IPV6_HEADER : IPV4_HEADER;
  if (mtu > USX_MTU_MAX) {
    mtu = USX_MTU_MAX;
  }
  return mtu - ip - UDP_HEADER - SCTP_COMMON_HEADER;
}
