/* fuzz_msxfer.c - the client's pipelined engine (msxfer.c), sctp-ms,
 * sctp-ms-cp and tcp-pipelined: SIZE and RETR pipelining, the 150 byte
 * counts, data claimed in command order (kept while their 150 is still to
 * come), listings ended by the message end or the EOF block, replies
 * overtaking data, uploads (ALLO, STOR, the bytes on stream 1 or in
 * blocks).
 *
 * In: byte 0 settings (memxp_cfg_from_byte; the transport is SCTP, or TCP
 * in block mode), byte 1: bit 0 pipelined (sctp-ms-cp), bits 1-2 the job:
 * 0 get a.dat b.dat c.dat, 1 get a.dat, 2 NLST, 3 put a local file of 10
 * bytes; bit 3 a get skips the names refused with 550 (mget) instead of
 * failing; bit 4 tcp-pipelined (MODE B and PASV first, then the job, its
 * data as blocks in the one data message); then the server's side
 * (memxp.h: stream-0 replies, 0x01 lines on stream 1 or the data
 * connection).
 * Out: nothing; aborts when a finished get left a .part file, or a name
 * neither complete nor counted as skipped. */
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "blockdata.h"
#include "fclient.h"
#include "tree.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char upload[PATH_MAX];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  fclient_init();
  if (snprintf(upload, sizeof upload, "%s/a.dat", tree_make()) >=
      (int)sizeof upload) {
    abort();
  }
  return 0;
}

/* After a successful get, no .part is left, and each name is a complete
 * file under its own name or one of the `skipped` (then absent). */
static void check_files(char **names, size_t n, size_t skipped) {
  size_t i, absent = 0;
  for (i = 0; i < n; i++) {
    char p[PATH_MAX];
    struct stat st;
    if (snprintf(p, sizeof p, "%s/%s", tree_outdir(), names[i]) >=
        (int)sizeof p) {
      abort();
    }
    if (stat(p, &st) != 0) {
      absent++;
    } else if (!S_ISREG(st.st_mode)) {
      abort();
    }
    if (snprintf(p, sizeof p, "%s/%s.part", tree_outdir(), names[i]) >=
            (int)sizeof p ||
        access(p, F_OK) == 0) {
      abort();
    }
  }
  if (absent != skipped) {
    abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static char a[] = "a.dat", b[] = "b.dat", c[] = "c.dat";
  char *names[] = {a, b, c};
  struct memxp_cfg cfg;
  struct fclient f;
  struct buf listing;
  int pipelined, job, skip, block;
  enum variant v;
  if (size < 2) {
    return 0;
  }
  memxp_cfg_from_byte(data[0], &cfg);
  pipelined = data[1] & 1;
  job = (data[1] >> 1) & 3;
  skip = (data[1] >> 3) & 1;
  block = (data[1] >> 4) & 1;
  v = block ? V_TCP_PIPELINED : pipelined ? V_SCTP_MS_CP : V_SCTP_MS;
  pipelined = pipelined || block;
  fclient_begin(&f, v, data + 2, size - 2, &cfg);
  if (block && bd_open(&f.cl) != 0) {
    fclient_end(&f);
    return 0;
  }
  switch (job) {
  case 0:
  case 1:
    if (ms_get(&f.cl, names, job == 0 ? 3 : 1, pipelined, skip) == 0) {
      check_files(names, job == 0 ? 3 : 1, f.cl.skipped);
    }
    break;
  case 2:
    buf_init(&listing, 1u << 20);
    (void)ms_list(&f.cl, "NLST", "", &listing);
    buf_free(&listing);
    break;
  default: (void)(block ? bd_put(&f.cl, upload) : ms_put(&f.cl, upload)); break;
  }
  fclient_end(&f);
  return 0;
}
