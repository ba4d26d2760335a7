/* capsource.h - where runcapture's packets come from (an interface, through
 * the kernel's packet ring, or a pcap already written) and the filter
 * program that says how much of each packet is kept. */
#ifndef FTP_CAPSOURCE_H
#define FTP_CAPSOURCE_H

#include <pcap/pcap.h>

#include "capopts.h"

/* The source o names, activated, with its filter program installed in the
 * kernel (a live capture) or in *prog (a file: pcap_offline_filter returns
 * the bytes it keeps of a packet); NULL, with the reason on stderr, if it
 * cannot open. */
pcap_t *capsource_open(const struct capopts *o, struct bpf_program *prog);

/* `keep` compiled into a program that keeps the packets it matches up to
 * the snapshot length and `headers` bytes of every other one: each of the
 * program's "reject" returns becomes "keep `headers` bytes".  The kernel
 * cuts a packet to the number its socket filter returns, so one capture
 * writes both kinds.  0, or -1 with the reason on stderr. */
int capsource_cut_program(pcap_t *p, const char *keep, int headers,
                          struct bpf_program *prog);

#endif
