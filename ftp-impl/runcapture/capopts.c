/* capopts.c - parse the runcapture command line (see capopts.h). */
#define _GNU_SOURCE
#include "capopts.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cliargs.h"
#include "cliparse.h"

static const char usage_text[] =
    "usage: runcapture -i IFACE [-s SNAPLEN] [-B KB] [--immediate-mode]\n"
    "                  [--headers N --keep FILTER]\n"
    "       runcapture --read IN.pcap --write OUT.pcap --headers N "
    "--keep FILTER\n"
    "Captures IFACE into one pcap per run: commands on stdin, one a line,\n"
    "answers on stdout (the first: \"listening on IFACE\"):\n"
    "  open PATH   start writing the packets from now on into PATH\n"
    "  close       once every packet handed so far is written, close it:\n"
    "              \"closed captured=N received=N dropped=N drain_ms=N\"\n"
    "  quit        (or end of input) close any open file and exit\n"
    "Packets while no file is open are read and discarded.\n"
    "options:\n"
    "  -s SNAPLEN         bytes kept of each packet (0, the default: "
    "262144)\n"
    "  -B KB              the kernel's ring (default 2048)\n"
    "  --immediate-mode   handed each packet at once, not in blocks\n"
    "  --headers N        keep N bytes of each packet, but the ones\n"
    "  --keep FILTER      this pcap filter matches: those up to SNAPLEN\n"
    "  --drain-limit-ms MS  longest wait at close for the last packets "
    "(5000)\n"
    "--read cuts a pcap already written the same way (the same filter\n"
    "program), into --write.  Exit 0; 1: the capture failed; 2: usage.\n";

enum { O_IMMEDIATE = 256, O_HEADERS, O_KEEP, O_READ, O_WRITE, O_DRAIN };

static const struct option long_options[] = {
    {"immediate-mode", no_argument, NULL, O_IMMEDIATE},
    {"headers", required_argument, NULL, O_HEADERS},
    {"keep", required_argument, NULL, O_KEEP},
    {"read", required_argument, NULL, O_READ},
    {"write", required_argument, NULL, O_WRITE},
    {"drain-limit-ms", required_argument, NULL, O_DRAIN},
    {"help", no_argument, NULL, CLI_HELP},
    {NULL, 0, NULL, 0},
};

static void check(const struct capopts *o) {
  if ((o->iface == NULL) == (o->read == NULL)) {
    cli_usage_exit("give either -i IFACE or --read FILE");
  }
  if (o->read != NULL && (o->write == NULL || o->headers == 0)) {
    cli_usage_exit("--read needs --write and --headers");
  }
  if (o->read == NULL && o->write != NULL) {
    cli_usage_exit("--write goes with --read");
  }
  if ((o->headers != 0) != (o->keep != NULL)) {
    cli_usage_exit("--headers and --keep go together");
  }
  if (o->headers != 0 && o->snaplen != 0 && o->headers >= o->snaplen) {
    cli_usage_exit("--headers must be below -s");
  }
}

static void handle_opt(void *ctx, int c, const char *arg) {
  struct capopts *o = ctx;
  switch (c) {
  case 'i': o->iface = arg; break;
  case 's': o->snaplen = cli_int("snaplen (-s)", arg, 0, 262144); break;
  case 'B': o->buffer_kb = cli_int("buffer (-B)", arg, 64, 1048576); break;
  case O_IMMEDIATE: o->immediate = 1; break;
  case O_HEADERS: o->headers = cli_int("headers", arg, 14, 65535); break;
  case O_KEEP: o->keep = arg; break;
  case O_READ: o->read = arg; break;
  case O_WRITE: o->write = arg; break;
  case O_DRAIN:
    o->drain_limit_ms = cli_int("drain-limit-ms", arg, 0, 600000);
    break;
  default: cli_usage_exit(NULL);
  }
}

void capopts_parse(int argc, char **argv, struct capopts *o) {
  const struct cli_spec spec = {
      "runcapture", usage_text, "i:s:B:h", CLI_GETOPT_SAYS,
      long_options, 0,          NULL,      NULL,
      handle_opt,   o};
  int first;
  memset(o, 0, sizeof *o);
  o->buffer_kb = 2048;
  o->drain_limit_ms = 5000;
  first = cli_parse(argc, argv, &spec);
  if (first < argc) {
    cli_unexpected_exit(argv[first]);
  }
  if (o->snaplen == 0) {
    o->snaplen = 262144;
  }
  check(o);
}
