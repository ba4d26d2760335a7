/* fuzz_msxfer.c - the client's multistream engine (msxfer.c), sctp-ms and
 * sctp-ms-cp: SIZE and RETR pipelining, the 150 byte counts, stream-1
 * bytes claimed in command order (kept while their 150 is still to come),
 * listings ended by the message end, replies overtaking data, uploads
 * (ALLO, STOR, the bytes on stream 1).
 *
 * In: byte 0 settings (memxp_cfg_from_byte; the transport is always SCTP),
 * byte 1: bit 0 pipelined (sctp-ms-cp), bits 1-2 the job: 0 get a.dat
 * b.dat c.dat, 1 get a.dat, 2 NLST, 3 put a local file of 10 bytes; then
 * the server's side (memxp.h: stream-0 replies, 0x01 lines on stream 1).
 * Out: nothing; aborts when a finished get left a file whose size differs
 * from what its 150 announced. */
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* After a successful get, each file is complete under its own name and no
 * .part is left. */
static void check_files(char **names, size_t n) {
  size_t i;
  for (i = 0; i < n; i++) {
    char p[PATH_MAX];
    struct stat st;
    if (snprintf(p, sizeof p, "%s/%s", tree_outdir(), names[i]) >=
            (int)sizeof p ||
        stat(p, &st) != 0 || !S_ISREG(st.st_mode)) {
      abort();
    }
    if (snprintf(p, sizeof p, "%s/%s.part", tree_outdir(), names[i]) >=
            (int)sizeof p ||
        access(p, F_OK) == 0) {
      abort();
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static char a[] = "a.dat", b[] = "b.dat", c[] = "c.dat";
  char *names[] = {a, b, c};
  struct memxp_cfg cfg;
  struct fclient f;
  struct buf listing;
  int pipelined, job;
  if (size < 2) {
    return 0;
  }
  memxp_cfg_from_byte(data[0], &cfg);
  pipelined = data[1] & 1;
  job = (data[1] >> 1) & 3;
  fclient_begin(&f, pipelined ? V_SCTP_MS_CP : V_SCTP_MS, data + 2, size - 2,
                &cfg);
  switch (job) {
  case 0:
  case 1:
    if (ms_get(&f.cl, names, job == 0 ? 3 : 1, pipelined) == 0) {
      check_files(names, job == 0 ? 3 : 1);
    }
    break;
  case 2:
    buf_init(&listing, 1u << 20);
    (void)ms_list(&f.cl, "NLST", "", &listing);
    buf_free(&listing);
    break;
  default: (void)ms_put(&f.cl, upload); break;
  }
  fclient_end(&f);
  return 0;
}
