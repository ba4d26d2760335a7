/* blockmode.h - RFC 959 block mode (MODE B, section 3.4.2): the framing of
 * the tcp-pipelined variant's one persistent data connection.  A block is a
 * descriptor byte, a 16-bit big-endian byte count and that many bytes; a
 * transfer is a run of blocks ending with one whose descriptor has the EOF
 * bit.  The decoder takes bytes in pieces of any size, as they come off the
 * network, and never reads past the EOF block of the current transfer. */
#ifndef FTP_BLOCKMODE_H
#define FTP_BLOCKMODE_H

#include <stddef.h>
#include <stdint.h>

#define BLK_EOR 0x80u     /* end of record (record structure only) */
#define BLK_EOF 0x40u     /* the last block of the transfer */
#define BLK_ERRORS 0x20u  /* suspected errors in the data */
#define BLK_RESTART 0x10u /* the data is a restart marker */
#define BLK_HEADER 3u
#define BLK_MAX 65535u /* bytes in one block */

/* Payload bytes of the next block: at most `left` (what the transfer still
 * has), `write_size` minus the header (so header and payload make one write
 * of at most write_size), and BLK_MAX.  write_size must exceed BLK_HEADER. */
size_t blk_payload(uint64_t left, size_t write_size);
/* The header of a block of n (<= BLK_MAX) bytes, EOF bit set if last. */
void blk_header(unsigned char out[BLK_HEADER], size_t n, int last);

enum blk_state {
  BLK_MORE = 0, /* the transfer goes on: feed more bytes */
  BLK_DONE,     /* its EOF block is complete: blk_reset before the next */
  BLK_BAD       /* a descriptor this file-structure stream cannot carry */
};

struct blk_dec {
  unsigned char hdr[BLK_HEADER];
  unsigned have;    /* header bytes of the current block collected */
  unsigned desc;    /* its descriptor, once the header is complete */
  size_t left;      /* its payload bytes still to come */
  uint64_t payload; /* payload bytes of this transfer so far */
  uint64_t blocks;  /* blocks of this transfer begun */
  enum blk_state state;
};

void blk_reset(struct blk_dec *d);
/* Decode from in[0..n): returns the input bytes used and points *data at
 * the payload among them (*dlen bytes, possibly 0).  Stops at the end of
 * one block's payload run, at the end of the EOF block (state BLK_DONE;
 * bytes after it are not used) and at a bad descriptor (state BLK_BAD).
 * Call again with the rest while it returns > 0 and the state is
 * BLK_MORE. */
size_t blk_decode(struct blk_dec *d, const char *in, size_t n,
                  const char **data, size_t *dlen);
/* Inside a block (header begun, not all of it or its payload yet)?  A data
 * connection that ends there ended mid-transfer. */
int blk_partial(const struct blk_dec *d);

#endif
