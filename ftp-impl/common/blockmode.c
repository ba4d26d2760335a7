/* blockmode.c - RFC 959 block-mode framing (see blockmode.h). */
#include "blockmode.h"

size_t blk_payload(uint64_t left, size_t write_size) {
  size_t room = write_size > BLK_HEADER ? write_size - BLK_HEADER : 0;
  if (room > BLK_MAX) {
    room = BLK_MAX;
  }
  return left < room ? (size_t)left : room;
}

void blk_header(unsigned char out[BLK_HEADER], size_t n, int last) {
  out[0] = (unsigned char)(last ? BLK_EOF : 0u);
  out[1] = (unsigned char)((n >> 8) & 0xffu);
  out[2] = (unsigned char)(n & 0xffu);
}

void blk_reset(struct blk_dec *d) {
  d->have = 0;
  d->desc = 0;
  d->left = 0;
  d->payload = 0;
  d->blocks = 0;
  d->state = BLK_MORE;
}

int blk_partial(const struct blk_dec *d) {
  return d->state == BLK_MORE && (d->have > 0 || d->left > 0);
}

/* File structure, as ftpd sends it: plain data blocks and the EOF block.
 * Record marks, restart markers and "suspected errors" would each change
 * what the payload means, so a stream carrying them is refused rather than
 * written into a file. */
static int desc_ok(unsigned desc) { return (desc & ~BLK_EOF) == 0; }

/* The header is complete: check it, start the block.  An empty EOF block
 * ends the transfer at once. */
static void start_block(struct blk_dec *d) {
  d->desc = d->hdr[0];
  d->left = ((size_t)d->hdr[1] << 8) | (size_t)d->hdr[2];
  d->have = 0;
  d->blocks++;
  if (!desc_ok(d->desc)) {
    d->state = BLK_BAD;
  } else if (d->left == 0 && (d->desc & BLK_EOF) != 0) {
    d->state = BLK_DONE;
  }
}

size_t blk_decode(struct blk_dec *d, const char *in, size_t n,
                  const char **data, size_t *dlen) {
  size_t used = 0;
  *data = in;
  *dlen = 0;
  if (d->state != BLK_MORE) {
    return 0;
  }
  if (d->left == 0) {
    while (used < n && d->have < BLK_HEADER) {
      d->hdr[d->have++] = (unsigned char)in[used++];
    }
    if (d->have < BLK_HEADER) {
      return used;
    }
    start_block(d);
    if (d->state != BLK_MORE || d->left == 0) {
      return used;
    }
  }
  *data = in + used;
  *dlen = n - used < d->left ? n - used : d->left;
  d->left -= *dlen;
  d->payload += *dlen;
  used += *dlen;
  if (d->left == 0 && (d->desc & BLK_EOF) != 0) {
    d->state = BLK_DONE;
  }
  return used;
}
