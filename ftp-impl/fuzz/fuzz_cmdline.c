/* fuzz_cmdline.c - the command lines of ftpd (tunables_parse_args), ftpc
 * (copts_parse) and bulkflow (bulkopts_parse): every option, its numeric
 * ranges, and the addresses given on it (--bind, --to, --listen).
 *
 * In: byte 0 chooses the program (0 ftpd, 1 ftpc, 2 bulkflow), the rest is
 * its arguments separated by NUL bytes (at most 32).
 * Out: nothing.  A usage error ends in exit(), which this target turns
 * into a return (-Wl,--wrap=exit); the usage text goes to /dev/null while
 * the parser runs, sanitizer reports still to stderr.  Host names are
 * never resolved here (-Wl,--wrap=getaddrinfo: numeric addresses only).
 * Aborts when a command line that parsed leaves a setting outside its
 * documented range. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bulkopts.h"
#include "clientopts.h"
#include "extblock.h"
#include "tunables.h"

#define MAX_ARGS 32

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
void __sanitizer_set_report_fd(void *fd);
void __real_exit(int status);
void __wrap_exit(int status);
int __real_getaddrinfo(const char *node, const char *service,
                       const struct addrinfo *hints, struct addrinfo **res);
int __wrap_getaddrinfo(const char *node, const char *service,
                       const struct addrinfo *hints, struct addrinfo **res);

static jmp_buf on_exit_jump;
static volatile int parsing; /* exit() from a parser, not from libFuzzer */
static int devnull = -1, saved_out = -1, saved_err = -1;

void __wrap_exit(int status) {
  if (!parsing) {
    __real_exit(status);
  }
  parsing = 0;
  longjmp(on_exit_jump, 1);
}

int __wrap_getaddrinfo(const char *node, const char *service,
                       const struct addrinfo *hints, struct addrinfo **res) {
  struct addrinfo h;
  memset(&h, 0, sizeof h);
  if (hints != NULL) {
    h = *hints;
  }
  h.ai_flags |= AI_NUMERICHOST;
  return __real_getaddrinfo(node, service, &h, res);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
  saved_out = dup(1);
  saved_err = dup(2);
  if (devnull < 0 || saved_out < 0 || saved_err < 0) {
    abort();
  }
  __sanitizer_set_report_fd((void *)(intptr_t)saved_err);
  return 0;
}

static void quiet(int on) {
  (void)fflush(stdout);
  (void)fflush(stderr);
  if (dup2(on ? devnull : saved_out, 1) < 0 ||
      dup2(on ? devnull : saved_err, 2) < 0) {
    abort();
  }
}

static void check_ftpd(void) {
  if (tunables.max_line < 64 || tunables.chunk < 512 ||
      tunables.idle_timeout_s < 1 || tunables.data_timeout_s < 1 ||
      tunables.open_timeout_s < 1 || tunables.root[0] != '/' ||
      (tunables.tcp_listen[0] == '\0' && tunables.sctp_listen[0] == '\0')) {
    abort();
  }
}

static void check_ftpc(const struct copts *o) {
  if (o->ncmds < 1 || o->cmds == NULL || o->timeout_s < 1 ||
      (unsigned)o->variant > V_XFTP || o->parallel < 1 ||
      o->parallel > EXT_MAX_CONNS) {
    abort();
  }
}

static void parse(int prog, int argc, char **argv) {
  static struct copts co;
  static struct bulkopts bo;
  optind = 0; /* glibc: start getopt afresh */
  switch (prog) {
  case 0:
    tunables_defaults();
    tunables_parse_args(argc, argv);
    check_ftpd();
    break;
  case 1:
    copts_parse(argc, argv, &co);
    check_ftpc(&co);
    break;
  default: bulkopts_parse(argc, argv, &bo); break;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char *const names[] = {"ftpd", "ftpc", "bulkflow"};
  char *copy, *argv[MAX_ARGS + 2];
  volatile int argc = 1;
  size_t i, start = 1;
  int prog;
  if (size == 0) {
    return 0;
  }
  prog = data[0] % 3;
  copy = malloc(size + 1);
  if (copy == NULL) {
    abort();
  }
  memcpy(copy, data, size);
  copy[size] = '\0';
  argv[0] = (char *)names[prog];
  for (i = 1; i <= size && argc <= MAX_ARGS; i++) {
    if (copy[i] == '\0') {
      argv[argc++] = copy + start;
      start = i + 1;
    }
  }
  argv[argc] = NULL;
  quiet(1);
  if (setjmp(on_exit_jump) == 0) {
    parsing = 1;
    parse(prog, argc, argv);
    parsing = 0;
  }
  quiet(0);
  free(copy);
  return 0;
}
