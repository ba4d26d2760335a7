/* extblock.h - GridFTP's extended block mode (MODE E, GFD.20 section 3.4):
 * the framing of the xftp variant, where one file travels as blocks over
 * several TCP data connections at once.  A block is a descriptor byte, a
 * 64-bit big-endian byte count and a 64-bit big-endian offset into the file,
 * then the bytes: blocks may arrive on any connection in any order.  Each
 * connection ends its part with an EOD block; exactly one connection also
 * carries the EOF bit, whose offset field says how many EODs (connections)
 * the receiver must see before the file is complete.  The decoder takes
 * bytes in pieces of any size, as they come off one connection. */
#ifndef FTP_EXTBLOCK_H
#define FTP_EXTBLOCK_H

#include <stddef.h>
#include <stdint.h>

#define EXT_EOR 0x80u     /* end of record (record structure only) */
#define EXT_EOF 0x40u     /* offset field = EOD count of the transfer */
#define EXT_ERRORS 0x20u  /* suspected errors in the data */
#define EXT_RESTART 0x10u /* the data is a restart marker */
#define EXT_EOD 0x08u     /* this connection carries no more of the file */
#define EXT_CLOSE 0x04u   /* and the sender closes it */
#define EXT_HEADER 17u
/* The most connections one transfer may use (ftpd's --max-parallel caps it
 * lower), and so the largest EOD count a receiver believes. */
#define EXT_MAX_CONNS 64u

void ext_header(unsigned char out[EXT_HEADER], unsigned desc, uint64_t count,
                uint64_t offset);

enum ext_state {
  EXT_MORE = 0, /* the connection's part goes on: feed more bytes */
  EXT_ENDED,    /* its EOD block has come: nothing more may follow */
  EXT_BAD       /* a descriptor or count this receiver cannot take */
};

struct ext_dec {
  unsigned char hdr[EXT_HEADER];
  unsigned have;      /* header bytes of the current block collected */
  unsigned desc;      /* its descriptor, once the header is complete */
  uint64_t left;      /* its payload bytes still to come */
  uint64_t at;        /* file offset of the next payload byte */
  uint64_t payload;   /* payload bytes this connection carried */
  uint64_t eof_count; /* EOD count from an EOF block (0: none here) */
  char why[96];       /* what made the state EXT_BAD */
  enum ext_state state;
};

void ext_reset(struct ext_dec *d);
/* Decode from in[0..n): returns the input bytes used and points *data at
 * payload among them (*dlen bytes, possibly 0) that belongs at file offset
 * *offset.  Stops at the end of one block's payload run, at the EOD block
 * (state EXT_ENDED) and at a bad block (EXT_BAD, reason in d->why).  Call
 * again with the rest while it returns > 0 and the state is EXT_MORE. */
size_t ext_decode(struct ext_dec *d, const char *in, size_t n,
                  const char **data, size_t *dlen, uint64_t *offset);
/* Inside a block (header begun, or payload still owed)? */
int ext_partial(const struct ext_dec *d);

/* The byte ranges a receiver has written, to prove at the end that the
 * blocks covered the file exactly once: no gap, no overlap. */
struct ext_ranges {
  uint64_t (*r)[2]; /* [offset, length] */
  size_t n, cap, limit;
};

/* limit: the most separate pieces one file may arrive in (bounds memory). */
void ext_ranges_init(struct ext_ranges *g, size_t limit);
void ext_ranges_free(struct ext_ranges *g);
/* A piece of payload as it was written (pieces that continue the last one
 * are merged).  -1 when the limit is reached. */
int ext_ranges_add(struct ext_ranges *g, uint64_t offset, uint64_t length);
/* Do the ranges tile [start, start + total) exactly?  0 yes; -1 with the
 * first fault described in why. */
int ext_ranges_check(struct ext_ranges *g, uint64_t start, uint64_t total,
                     char *why, size_t whycap);

#endif
