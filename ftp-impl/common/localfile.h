/* localfile.h - where received bytes go: a local file written under a
 * temporary name (NAME.part, renamed only when complete and the byte count
 * matches), or a memory buffer (listings).  Emits the file_first_byte,
 * file_last_byte and file_done events. */
#ifndef FTP_LOCALFILE_H
#define FTP_LOCALFILE_H

#include <limits.h>
#include <stdint.h>

#include "str.h"

struct sink {
  char name[256];      /* remote name, for events */
  char path[PATH_MAX]; /* final local path ("" for memory) */
  char part[PATH_MAX]; /* temporary local path */
  int fd;              /* -1 for memory */
  int discard;         /* out_dir "/dev/null": count, keep nothing */
  struct buf *mem;
  char *pending; /* bytes not yet written to fd (SINK_BATCH at most) */
  size_t pending_len;
  uint64_t got;
  double t_first;
  double t_last;
};

/* Local name = last component of remote; refuses ".", ".." and "".
 * out_dir "/dev/null" keeps nothing (benchmarks): bytes are only counted. */
int sink_open_file(struct sink *k, const char *out_dir, const char *remote,
                   char *err, size_t errcap);
void sink_open_mem(struct sink *k, const char *label, struct buf *mem);
/* -1 on a local write error.  A file's bytes are written in batches of
 * SINK_BATCH: inside the pinned kernel each write is a system call, and a
 * TCP download would otherwise make one per segment. */
#define SINK_BATCH (256u * 1024u)
int sink_write(struct sink *k, const char *p, size_t n, double t);
/* n bytes that belong at `offset` (blocks of MODE E arrive in any order):
 * written there, or for memory, placed there (zeros fill what has not come
 * yet).  -1 on a local write error. */
int sink_write_at(struct sink *k, uint64_t offset, const char *p, size_t n,
                  double t);
/* Complete: check got == expected (expected < 0: unknown), close, rename,
 * emit the events.  -1 (err set, .part kept) on a short/long file. */
int sink_finish(struct sink *k, int64_t expected, char *err, size_t errcap);
/* Give up: write what is pending, close, keep the .part name. */
void sink_abandon(struct sink *k);
/* Give up before any byte arrived: close and remove the .part file. */
void sink_remove(struct sink *k);

#endif
