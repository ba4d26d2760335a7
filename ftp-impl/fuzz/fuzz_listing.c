/* fuzz_listing.c - the client's listing handling: ftpc's `ls` and `mget`
 * (ftpc.c, included here for its static functions): the NLST listing split
 * into lines (CR LF or LF), each line's last component matched against the
 * mget pattern, and the matches fetched (xfer.c or msxfer.c), as in a real
 * session after login.
 *
 * In: byte 0 settings (memxp_cfg_from_byte), byte 1 the variant (bits 0-1:
 * tcp, sctp-naive, sctp-ms, sctp-ms-cp) and the command (bit 2: ls, else
 * mget), then the pattern (or ls argument) up to the first '\n', then the
 * server's side (memxp.h): the 227/229, 150, 226 replies, the listing and
 * the files as data messages.
 * Out: nothing; aborts when a split line still holds a line feed. */
#include "ftpc_main.h"

#include "../ftpc/ftpc.c"

#include "fclient.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  fclient_init();
  return 0;
}

/* split_lines on the raw input too: no line holds an LF, and together the
 * lines are no longer than the input. */
static void check_split(const uint8_t *p, size_t n) {
  struct buf b;
  char **lines = NULL;
  size_t i, k, total = 0;
  buf_init(&b, n + 1);
  if (buf_append(&b, p, n) != 0) {
    abort();
  }
  k = split_lines(&b, &lines);
  for (i = 0; i < k; i++) {
    size_t len = strlen(lines[i]);
    if (strchr(lines[i], '\n') != NULL) {
      abort();
    }
    total += len + 1;
  }
  if (total > n + 1) {
    abort();
  }
  free(lines);
  buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct memxp_cfg cfg;
  struct fclient f;
  char arg[256];
  const uint8_t *nl;
  size_t alen;
  if (size < 2) {
    return 0;
  }
  nl = memchr(data + 2, '\n', size - 2);
  alen = nl != NULL ? (size_t)(nl - data - 2) : size - 2;
  if (alen >= sizeof arg) {
    return 0;
  }
  memcpy(arg, data + 2, alen);
  arg[alen] = '\0';
  if (strlen(arg) != alen) {
    return 0; /* a command-line word holds no NUL */
  }
  check_split(data, size);
  memxp_cfg_from_byte(data[0], &cfg);
  fclient_begin(&f, (enum variant)(data[1] & 3u),
                nl != NULL ? nl + 1 : data + size,
                nl != NULL ? size - alen - 3 : 0, &cfg);
  f.cl.cc.on_reply = on_reply;
  f.cl.cc.reply_ctx = &f.cl;
  if (data[1] & 4u) {
    (void)do_list(&f.cl, "NLST", arg);
  } else if (arg[0] != '\0') {
    (void)do_mget(&f.cl, arg);
  }
  fclient_end(&f);
  return 0;
}
