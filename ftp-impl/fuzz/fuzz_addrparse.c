/* fuzz_addrparse.c - every address parser of addrparse.c: the PORT and EPRT
 * arguments (server), the 227 and 229 reply texts (client), the HOST:PORT
 * of both command lines (numeric addresses only: a name would go to the
 * resolver), and the formatters on what was parsed.
 *
 * In: any bytes, taken as one NUL-terminated string (at most 1023 bytes).
 * Out: nothing; aborts when a parsed address does not survive formatting
 * and parsing again, or a port is out of range. */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "addrparse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int same(const struct addr *a, const struct addr *b) {
  return addr_same_host(a, b) && addr_port(a) == addr_port(b);
}

static void check_port(const struct addr *a) {
  char text[64];
  struct addr back;
  int port = addr_port(a);
  if (port < 0 || port > 65535) {
    abort();
  }
  if (addr_fmt_port_arg(a, text, sizeof text) != 0 ||
      addr_parse_port_arg(text, &back) != 0 || !same(a, &back) ||
      addr_parse_227(text, &back) != 0 || !same(a, &back)) {
    abort();
  }
}

static void check_eprt(const struct addr *a) {
  char text[96];
  struct addr back;
  if (addr_fmt_eprt_arg(a, text, sizeof text) != 0 ||
      addr_parse_eprt_arg(text, &back) != 0 || !same(a, &back)) {
    abort();
  }
  if (addr_to_str(a, text, sizeof text) != 0 ||
      addr_ip_str(a, text, sizeof text) != 0) {
    abort();
  }
}

/* Is the host part of a HOST:PORT (as addr_parse_hostport cuts it) a
 * numeric IPv4 or IPv6 address?  Only then is it parsed here: a name, or
 * a numeric-looking one the resolver does not take as numeric, would be
 * looked up in the DNS. */
static int numeric(const char *s) {
  char host[256];
  unsigned char bin[16];
  const char *end;
  size_t n;
  if (s[0] == '[') {
    end = strchr(s, ']');
    s++;
  } else {
    end = strchr(s, ':');
    if (end != NULL && strchr(end + 1, ':') != NULL) {
      end = s + strlen(s); /* several colons: the whole is the host */
    }
  }
  n = end != NULL ? (size_t)(end - s) : strlen(s);
  if (n >= sizeof host) {
    return 0;
  }
  memcpy(host, s, n);
  host[n] = '\0';
  return inet_pton(AF_INET, host, bin) == 1 ||
         inet_pton(AF_INET6, host, bin) == 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char s[1024];
  struct addr a;
  int port;
  if (size >= sizeof s) {
    return 0;
  }
  memcpy(s, data, size);
  s[size] = '\0';
  if (addr_parse_port_arg(s, &a) == 0) {
    check_port(&a);
    check_eprt(&a);
  }
  if (addr_parse_eprt_arg(s, &a) == 0) {
    check_eprt(&a);
    if (a.ss.ss_family == AF_INET) {
      check_port(&a);
    }
  }
  if (addr_parse_227(s, &a) == 0) {
    check_port(&a);
  }
  if (addr_parse_229(s, &port) == 0 && (port < 0 || port > 65535)) {
    abort();
  }
  if (numeric(s) && addr_parse_hostport(s, 21, &a) == 0) {
    check_eprt(&a);
  }
  return 0;
}
