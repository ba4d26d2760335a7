/* addrparse.c - address parsing and formatting (see addrparse.h). */
#define _GNU_SOURCE
#include "addrparse.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>

#include "str.h"

static int parse_port(const char *s, int *port) {
  uint64_t v;
  if (str_to_u64(s, 65535, &v) != 0) {
    return -1;
  }
  *port = (int)v;
  return 0;
}

static int resolve(const char *host, int port, struct addr *out) {
  struct addrinfo hints;
  struct addrinfo *res = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(host, NULL, &hints, &res) != 0 || res == NULL) {
    return -1;
  }
  if (res->ai_addrlen > sizeof out->ss) {
    freeaddrinfo(res);
    return -1;
  }
  memset(out, 0, sizeof *out);
  memcpy(&out->ss, res->ai_addr, res->ai_addrlen);
  out->len = res->ai_addrlen;
  freeaddrinfo(res);
  addr_set_port(out, port);
  return 0;
}

int addr_parse_hostport(const char *s, int default_port, struct addr *out) {
  char host[256];
  const char *portstr = NULL;
  int port = default_port;
  if (s[0] == '[') {
    const char *end = strchr(s, ']');
    size_t n;
    if (end == NULL) {
      return -1;
    }
    n = (size_t)(end - s - 1);
    if (n >= sizeof host) {
      return -1;
    }
    memcpy(host, s + 1, n);
    host[n] = '\0';
    if (end[1] == ':') {
      portstr = end + 2;
    } else if (end[1] != '\0') {
      return -1;
    }
  } else {
    const char *colon = strrchr(s, ':');
    if (colon != NULL && strchr(s, ':') == colon) {
      size_t n = (size_t)(colon - s);
      if (n >= sizeof host) {
        return -1;
      }
      memcpy(host, s, n);
      host[n] = '\0';
      portstr = colon + 1;
    } else if (str_copy(host, sizeof host, s) != 0) {
      return -1;
    }
  }
  if (portstr != NULL && parse_port(portstr, &port) != 0) {
    return -1;
  }
  if (port < 0) {
    return -1;
  }
  return resolve(host, port, out);
}

static int parse_six(const char *arg, unsigned v[6]) {
  const char *p = arg;
  int i;
  for (i = 0; i < 6; i++) {
    unsigned n = 0;
    int digits = 0;
    while (*p >= '0' && *p <= '9' && digits < 4) {
      n = n * 10 + (unsigned)(*p - '0');
      p++;
      digits++;
    }
    if (digits == 0 || n > 255) {
      return -1;
    }
    v[i] = n;
    if (i < 5) {
      if (*p != ',') {
        return -1;
      }
      p++;
    }
  }
  return 0;
}

static void make_v4(const unsigned v[6], struct addr *out) {
  struct sockaddr_in *sin = (struct sockaddr_in *)&out->ss;
  uint32_t ip = (v[0] << 24) | (v[1] << 16) | (v[2] << 8) | v[3];
  memset(out, 0, sizeof *out);
  sin->sin_family = AF_INET;
  sin->sin_addr.s_addr = htonl(ip);
  sin->sin_port = htons((uint16_t)((v[4] << 8) | v[5]));
  out->len = sizeof *sin;
}

int addr_parse_port_arg(const char *arg, struct addr *out) {
  unsigned v[6];
  size_t n = strspn(arg, "0123456789,");
  if (arg[n] != '\0' || parse_six(arg, v) != 0) {
    return -1;
  }
  make_v4(v, out);
  return 0;
}

int addr_parse_eprt_arg(const char *arg, struct addr *out) {
  char d = arg[0];
  char fields[3][64];
  const char *p = arg + 1;
  int i, port;
  if (d < 33 || d > 126) {
    return -1;
  }
  for (i = 0; i < 3; i++) {
    const char *end = strchr(p, d);
    size_t n;
    if (end == NULL) {
      return -1;
    }
    n = (size_t)(end - p);
    if (n >= sizeof fields[i]) {
      return -1;
    }
    memcpy(fields[i], p, n);
    fields[i][n] = '\0';
    p = end + 1;
  }
  if (*p != '\0' || parse_port(fields[2], &port) != 0) {
    return -1;
  }
  memset(out, 0, sizeof *out);
  if (strcmp(fields[0], "1") == 0) {
    struct sockaddr_in *sin = (struct sockaddr_in *)&out->ss;
    if (inet_pton(AF_INET, fields[1], &sin->sin_addr) != 1) {
      return -1;
    }
    sin->sin_family = AF_INET;
    out->len = sizeof *sin;
  } else if (strcmp(fields[0], "2") == 0) {
    struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&out->ss;
    if (inet_pton(AF_INET6, fields[1], &sin6->sin6_addr) != 1) {
      return -1;
    }
    sin6->sin6_family = AF_INET6;
    out->len = sizeof *sin6;
  } else {
    return -1;
  }
  addr_set_port(out, port);
  return 0;
}

int addr_fmt_port_arg(const struct addr *a, char *dst, size_t cap) {
  const struct sockaddr_in *sin = (const struct sockaddr_in *)&a->ss;
  uint32_t ip;
  int port;
  if (a->ss.ss_family != AF_INET) {
    return -1;
  }
  ip = ntohl(sin->sin_addr.s_addr);
  port = ntohs(sin->sin_port);
  return str_fmt(dst, cap, "%u,%u,%u,%u,%d,%d", (ip >> 24) & 255u,
                 (ip >> 16) & 255u, (ip >> 8) & 255u, ip & 255u, port >> 8,
                 port & 255);
}

int addr_fmt_eprt_arg(const struct addr *a, char *dst, size_t cap) {
  char ip[INET6_ADDRSTRLEN];
  if (addr_ip_str(a, ip, sizeof ip) != 0) {
    return -1;
  }
  return str_fmt(dst, cap, "|%d|%s|%d|", a->ss.ss_family == AF_INET ? 1 : 2, ip,
                 addr_port(a));
}

int addr_parse_227(const char *text, struct addr *out) {
  const char *p;
  for (p = text; *p != '\0'; p++) {
    unsigned v[6];
    if (*p >= '0' && *p <= '9' && (p == text || p[-1] < '0' || p[-1] > '9') &&
        parse_six(p, v) == 0) {
      make_v4(v, out);
      return 0;
    }
  }
  return -1;
}

int addr_parse_229(const char *text, int *port) {
  const char *open = strchr(text, '(');
  char d;
  const char *p;
  char num[8];
  size_t n = 0;
  if (open == NULL) {
    return -1;
  }
  d = open[1];
  if (d == '\0' || open[2] != d || open[3] != d) {
    return -1;
  }
  for (p = open + 4; *p >= '0' && *p <= '9' && n + 1 < sizeof num; p++) {
    num[n++] = *p;
  }
  num[n] = '\0';
  if (*p != d || parse_port(num, port) != 0 || *port == 0) {
    return -1;
  }
  return 0;
}

int addr_port(const struct addr *a) {
  if (a->ss.ss_family == AF_INET) {
    return ntohs(((const struct sockaddr_in *)&a->ss)->sin_port);
  }
  return ntohs(((const struct sockaddr_in6 *)&a->ss)->sin6_port);
}

void addr_set_port(struct addr *a, int port) {
  if (a->ss.ss_family == AF_INET) {
    ((struct sockaddr_in *)&a->ss)->sin_port = htons((uint16_t)port);
  } else {
    ((struct sockaddr_in6 *)&a->ss)->sin6_port = htons((uint16_t)port);
  }
}

/* The address as 16 bytes of IPv6 (v4 mapped). */
static void as_v6(const struct addr *a, unsigned char out[16]) {
  if (a->ss.ss_family == AF_INET) {
    const struct sockaddr_in *sin = (const struct sockaddr_in *)&a->ss;
    memset(out, 0, 10);
    out[10] = 0xff;
    out[11] = 0xff;
    memcpy(out + 12, &sin->sin_addr, 4);
  } else {
    const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)&a->ss;
    memcpy(out, &sin6->sin6_addr, 16);
  }
}

int addr_same_host(const struct addr *a, const struct addr *b) {
  unsigned char x[16], y[16];
  as_v6(a, x);
  as_v6(b, y);
  return memcmp(x, y, 16) == 0;
}

int addr_ip_str(const struct addr *a, char *dst, size_t cap) {
  const void *src;
  if (a->ss.ss_family == AF_INET) {
    src = &((const struct sockaddr_in *)&a->ss)->sin_addr;
  } else {
    src = &((const struct sockaddr_in6 *)&a->ss)->sin6_addr;
  }
  if (cap > (size_t)INT32_MAX ||
      inet_ntop(a->ss.ss_family, src, dst, (socklen_t)cap) == NULL) {
    return -1;
  }
  return 0;
}

int addr_to_str(const struct addr *a, char *dst, size_t cap) {
  char ip[INET6_ADDRSTRLEN];
  if (addr_ip_str(a, ip, sizeof ip) != 0) {
    return -1;
  }
  if (a->ss.ss_family == AF_INET6) {
    return str_fmt(dst, cap, "[%s]:%d", ip, addr_port(a));
  }
  return str_fmt(dst, cap, "%s:%d", ip, addr_port(a));
}
