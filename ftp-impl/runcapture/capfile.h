/* capfile.h - the pcap of one run: opened when the run starts, closed once
 * every packet the kernel handed the capture by then is written, with the
 * counts the harness checks (as tcpdump prints them). */
#ifndef FTP_CAPFILE_H
#define FTP_CAPFILE_H

#include <pcap/pcap.h>
#include <stdint.h>

struct capfile {
  pcap_t *src;
  pcap_dumper_t *out;     /* NULL while no file is open */
  int flush_each;         /* write each packet through at once */
  uint64_t written;       /* packets written into the open file */
  uint64_t read;          /* packets read from the ring, all files' */
  uint64_t before_open;   /* of those still to read, handed before open */
  int failed;             /* a write failed: the file is incomplete */
  struct pcap_stat since; /* the kernel's counts when the file opened */
};

struct capcounts {
  uint64_t captured; /* written into the file */
  uint64_t received; /* handed over by the kernel while it was open */
  uint64_t dropped;  /* lost to a full ring while it was open */
  int drain_ms;      /* the wait for the last ones (-1: the limit came) */
};

void capfile_init(struct capfile *f, pcap_t *src, int flush_each);
/* Read every packet the ring holds now (without waiting); -1 on error. */
int capfile_read_ring(struct capfile *f);
/* Start writing into path; -1 with the reason in err. */
int capfile_open(struct capfile *f, const char *path, char *err, size_t n);
/* Wait (up to drain_limit_ms) until every packet handed over is written,
 * then close the file; its counts.  -1 with the reason in err if the file
 * could not be written whole (it is closed all the same). */
int capfile_close(struct capfile *f, int drain_limit_ms, struct capcounts *c,
                  char *err, size_t n);

#endif
