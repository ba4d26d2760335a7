/* cliargs.h - checked command-line values for the programs' option parsers
 * (cliparse.h): a bad value prints "<program>: --opt: need ..." (ftpd's and
 * ftpc's terse wording: "<program>: bad numeric argument"), then the usage,
 * and exits 2 before anything starts. */
#ifndef FTP_CLIARGS_H
#define FTP_CLIARGS_H

#include <stddef.h>

#include "addrparse.h"
#include "transport.h"

/* The program's name and usage text, for every message that follows. */
void cli_init(const char *program, const char *usage);
/* on: ftpd's and ftpc's wording of a bad value (cliparse.h, CLI_TERSE). */
void cli_set_terse(int on);
void cli_usage_exit(const char *why) __attribute__((noreturn));
void cli_bad_value(const char *opt, const char *need) __attribute__((noreturn));
void cli_unknown_exit(const char *word) __attribute__((noreturn));
void cli_unexpected_exit(const char *word) __attribute__((noreturn));
/* A whole number within [lo, hi]. */
int cli_int(const char *opt, const char *s, int lo, int hi);
/* ADDR:PORT (port_needed: a port above 0). */
void cli_addr(const char *opt, const char *s, struct addr *a, int port_needed);
/* An address without a port. */
void cli_host(const char *opt, const char *s, struct addr *a);
/* A copy of s into dst (cap bytes with the NUL), or "argument too long". */
void cli_copy(char *dst, size_t cap, const char *s);
/* "tcp" or "sctp". */
enum xp_proto cli_proto(const char *opt, const char *s);

#endif
