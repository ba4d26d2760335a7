/* capfile.c - one run's pcap within a long-lived capture (see capfile.h). */
#include "capfile.h"

#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "str.h"
#include "sysutil.h"

/* How often a closing file asks the kernel whether it has handed over more
 * than was written (in block mode the last block waits for its timer). */
#define DRAIN_POLL_MS 100

void capfile_init(struct capfile *f, pcap_t *src, int flush_each) {
  memset(f, 0, sizeof *f);
  f->src = src;
  f->flush_each = flush_each;
}

static void on_packet(unsigned char *user, const struct pcap_pkthdr *h,
                      const unsigned char *bytes) {
  struct capfile *f = (struct capfile *)(void *)user;
  f->read++;
  if (f->out == NULL) {
    return;
  }
  if (f->before_open > 0) {
    f->before_open--;
    return;
  }
  pcap_dump((unsigned char *)f->out, h, bytes);
  if (f->flush_each && pcap_dump_flush(f->out) != 0) {
    f->failed = 1;
  }
  f->written++;
}

/* Packets the kernel handed over (counted in `stats`, drops aside) that are
 * not read yet.  libpcap's counts are 32 bits wide and wrap: the difference
 * is taken modulo 2^32. */
static uint32_t unread(const struct pcap_stat *stats, uint64_t read) {
  uint32_t pending =
      (uint32_t)(stats->ps_recv - stats->ps_drop) - (uint32_t)read;
  return pending < 0x80000000u ? pending : 0;
}

int capfile_read_ring(struct capfile *f) {
  int n;
  do {
    n = pcap_dispatch(f->src, -1, on_packet, (unsigned char *)f);
  } while (n > 0);
  return n < 0 ? -1 : 0;
}

int capfile_open(struct capfile *f, const char *path, char *err, size_t n) {
  if (f->out != NULL) {
    (void)str_fmt(err, n, "a file is open already");
    return -1;
  }
  /* What the ring holds now came before the run.  In block mode some of it
   * is in a block the kernel has not handed over yet: the first packets
   * read from it are those the kernel counted before now. */
  if (capfile_read_ring(f) != 0 || pcap_stats(f->src, &f->since) != 0) {
    (void)str_fmt(err, n, "%s", pcap_geterr(f->src));
    return -1;
  }
  f->before_open = unread(&f->since, f->read);
  f->out = pcap_dump_open(f->src, path);
  if (f->out == NULL) {
    (void)str_fmt(err, n, "%s", pcap_geterr(f->src));
    return -1;
  }
  f->written = 0;
  f->failed = 0;
  return 0;
}

/* The kernel's counts since the file opened; -1 on error, 1 if some of
 * the packets it handed over are still to be read. */
static int handed(struct capfile *f, struct capcounts *c) {
  struct pcap_stat now;
  if (pcap_stats(f->src, &now) != 0) {
    return -1;
  }
  c->received = (uint32_t)(now.ps_recv - f->since.ps_recv);
  c->dropped = (uint32_t)(now.ps_drop - f->since.ps_drop);
  return unread(&now, f->read) > 0;
}

static int drain(struct capfile *f, int limit_ms, struct capcounts *c) {
  int64_t started = sys_mono_ms();
  int64_t deadline = started + limit_ms;
  for (;;) {
    int unread;
    if (capfile_read_ring(f) != 0 || (unread = handed(f, c)) < 0) {
      return -1;
    }
    if (!unread) {
      c->drain_ms = (int)(sys_mono_ms() - started);
      return 0;
    }
    if (sys_mono_ms() >= deadline) {
      c->drain_ms = -1;
      return 0;
    }
    int fd = pcap_get_selectable_fd(f->src);
    int wait_ms = sys_ms_left(deadline);
    wait_ms = wait_ms < DRAIN_POLL_MS ? wait_ms : DRAIN_POLL_MS;
    if (fd < 0 || sys_wait_fd(fd, POLLIN, wait_ms) < 0) {
      return -1;
    }
  }
}

int capfile_close(struct capfile *f, int drain_limit_ms, struct capcounts *c,
                  char *err, size_t n) {
  int status = 0;
  memset(c, 0, sizeof *c);
  if (f->out == NULL) {
    (void)str_fmt(err, n, "no file is open");
    return -1;
  }
  if (drain(f, drain_limit_ms, c) != 0) {
    (void)str_fmt(err, n, "%s", pcap_geterr(f->src));
    status = -1;
  }
  c->captured = f->written;
  if (pcap_dump_flush(f->out) != 0 || f->failed) {
    (void)str_fmt(err, n, "cannot write the pcap");
    status = -1;
  }
  pcap_dump_close(f->out);
  f->out = NULL;
  return status;
}
