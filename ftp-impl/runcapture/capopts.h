/* capopts.h - the runcapture command line: the interface (or, for a pcap
 * already written, the file) to read, and how much of each packet to keep,
 * checked before anything starts (usage errors exit 2). */
#ifndef FTP_CAPOPTS_H
#define FTP_CAPOPTS_H

struct capopts {
  const char *iface;  /* -i: live capture of this interface */
  const char *read;   /* --read: a pcap file instead (cut into --write) */
  const char *write;  /* --write: with --read, the cut copy */
  int snaplen;        /* -s: bytes kept of a packet (0: 262144) */
  int buffer_kb;      /* -B: the kernel's ring */
  int immediate;      /* --immediate-mode: handed each packet at once */
  int headers;        /* --headers N: keep N bytes of the packets that */
  const char *keep;   /*   --keep (a pcap filter) does not keep whole */
  int drain_limit_ms; /* longest wait for a closing file's last packets */
};

/* Parse argv; prints usage and exits 2 on any error. */
void capopts_parse(int argc, char **argv, struct capopts *o);

#endif
