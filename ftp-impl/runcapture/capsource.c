/* capsource.c - open runcapture's source and its filter (see capsource.h). */
#include "capsource.h"

#include <stdio.h>
#include <string.h>

static pcap_t *fail(pcap_t *p, const char *what, const char *why) {
  fprintf(stderr, "runcapture: %s: %s\n", what, why);
  if (p != NULL) {
    pcap_close(p);
  }
  return NULL;
}

static pcap_t *open_live(const struct capopts *o) {
  char err[PCAP_ERRBUF_SIZE];
  int status;
  pcap_t *p = pcap_create(o->iface, err);
  if (p == NULL) {
    return fail(NULL, o->iface, err);
  }
  /* the same settings as tcpdump's: promiscuous, 1 s block timeout */
  if (pcap_set_snaplen(p, o->snaplen) != 0 || pcap_set_promisc(p, 1) != 0 ||
      pcap_set_timeout(p, 1000) != 0 ||
      pcap_set_buffer_size(p, o->buffer_kb * 1024) != 0 ||
      pcap_set_immediate_mode(p, o->immediate) != 0) {
    return fail(p, o->iface, "cannot set the capture's options");
  }
  status = pcap_activate(p);
  if (status < 0) {
    return fail(p, o->iface,
                status == PCAP_ERROR ? pcap_geterr(p)
                                     : pcap_statustostr(status));
  }
  if (status > 0) {
    fprintf(stderr, "runcapture: %s: %s\n", o->iface, pcap_statustostr(status));
  }
  return p;
}

pcap_t *capsource_open(const struct capopts *o, struct bpf_program *prog) {
  char err[PCAP_ERRBUF_SIZE];
  pcap_t *p;
  memset(prog, 0, sizeof *prog);
  if (o->read != NULL) {
    p = pcap_open_offline(o->read, err);
    if (p == NULL) {
      return fail(NULL, o->read, err);
    }
  } else if ((p = open_live(o)) == NULL) {
    return NULL;
  }
  if (o->keep == NULL) {
    return p;
  }
  if (capsource_cut_program(p, o->keep, o->headers, prog) != 0) {
    pcap_close(p);
    return NULL;
  }
  if (o->read == NULL && pcap_setfilter(p, prog) != 0) {
    pcap_freecode(prog);
    return fail(p, "cannot install the filter", pcap_geterr(p));
  }
  return p;
}

int capsource_cut_program(pcap_t *p, const char *keep, int headers,
                          struct bpf_program *prog) {
  if (pcap_compile(p, prog, keep, 1, PCAP_NETMASK_UNKNOWN) != 0) {
    fprintf(stderr, "runcapture: --keep %s: %s\n", keep, pcap_geterr(p));
    return -1;
  }
  for (unsigned i = 0; i < prog->bf_len; i++) {
    struct bpf_insn *insn = &prog->bf_insns[i];
    if (BPF_CLASS(insn->code) != BPF_RET) {
      continue;
    }
    if (BPF_RVAL(insn->code) != BPF_K) {
      /* a return of the accumulator: no constant to rewrite */
      fprintf(stderr, "runcapture: --keep %s: a return runcapture cannot cut\n",
              keep);
      pcap_freecode(prog);
      return -1;
    }
    if (insn->k == 0) {
      insn->k = (bpf_u_int32)headers;
    }
  }
  return 0;
}
