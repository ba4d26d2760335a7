/* fuzz_blockmode.c - the block-mode decoder (blockmode.c), which ftpc runs
 * on the bytes of its tcp-pipelined data connection and ftpd on block-mode
 * uploads.
 *
 * In: byte 0 how many bytes one feed holds (as memxp.c cuts receives:
 * whole, 1, 2, 3, 7, 16, 100, 4096), byte 1 a write size for the encoder,
 * then any bytes.
 * Out: nothing; aborts when the streaming decoder, fed in pieces, disagrees
 * with a whole-buffer reference parse (payload, transfer ends, where a bad
 * descriptor stops it), when it returns more than it was given, or when
 * the encoder's blocks of the input (one transfer) do not decode to the
 * input again. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "blockmode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const size_t pieces[] = {0, 1, 2, 3, 7, 16, 100, 4096};
static const size_t writes[] = {4, 5, 100, 512, 4096, 65536, 65538, 1 << 20};

struct result {
  uint8_t *payload;
  size_t len;
  size_t ends[64]; /* payload offsets where a transfer ended */
  size_t nends;
  int bad;
  size_t stop; /* input bytes used */
};

static void add_end(struct result *r) {
  if (r->nends < sizeof r->ends / sizeof r->ends[0]) {
    r->ends[r->nends] = r->len;
  }
  r->nends++;
}

/* The reference: the whole input at once, as RFC 959 3.4.2 reads. */
static void reference(const uint8_t *p, size_t n, struct result *r) {
  size_t i = 0;
  while (n - i >= BLK_HEADER) {
    unsigned desc = p[i];
    size_t count = ((size_t)p[i + 1] << 8) | p[i + 2];
    if ((desc & ~BLK_EOF) != 0) {
      r->bad = 1;
      i += BLK_HEADER;
      break;
    }
    if (n - i - BLK_HEADER < count) {
      memcpy(r->payload + r->len, p + i + BLK_HEADER, n - i - BLK_HEADER);
      r->len += n - i - BLK_HEADER;
      i = n;
      break;
    }
    memcpy(r->payload + r->len, p + i + BLK_HEADER, count);
    r->len += count;
    i += BLK_HEADER + count;
    if ((desc & BLK_EOF) != 0) {
      add_end(r);
    }
  }
  r->stop = r->bad ? i : n;
}

static void streaming(const uint8_t *p, size_t n, size_t piece,
                      struct result *r) {
  struct blk_dec d;
  size_t off = 0;
  blk_reset(&d);
  while (off < n && !r->bad) {
    size_t end = piece == 0 || n - off < piece ? n : off + piece;
    while (off < end && !r->bad) {
      const char *q;
      size_t dlen, used;
      used = blk_decode(&d, (const char *)p + off, end - off, &q, &dlen);
      if (used == 0 || used > end - off || dlen > used ||
          q < (const char *)p + off ||
          q + dlen > (const char *)p + off + used) {
        abort();
      }
      memcpy(r->payload + r->len, q, dlen);
      r->len += dlen;
      off += used;
      if (d.state == BLK_DONE) {
        add_end(r);
        blk_reset(&d);
      } else if (d.state == BLK_BAD) {
        r->bad = 1;
      }
    }
  }
  r->stop = off;
}

static void same(const struct result *a, const struct result *b) {
  size_t k = a->nends < 64 ? a->nends : 64;
  if (a->len != b->len || a->nends != b->nends || a->bad != b->bad ||
      a->stop != b->stop || memcmp(a->payload, b->payload, a->len) != 0 ||
      memcmp(a->ends, b->ends, k * sizeof a->ends[0]) != 0) {
    abort();
  }
}

/* Encode p as one transfer, then decode it in pieces: the same bytes, one
 * transfer end, nothing left over. */
static void round_trip(const uint8_t *p, size_t n, size_t ws, size_t piece) {
  size_t cap = n + BLK_HEADER * (n / (ws - BLK_HEADER) + 2);
  uint8_t *enc = malloc(cap);
  struct result r;
  size_t done = 0, len = 0;
  if (enc == NULL) {
    abort();
  }
  do {
    size_t k = blk_payload(n - done, ws);
    if (len + BLK_HEADER + k > cap || k > BLK_MAX) {
      abort();
    }
    blk_header(enc + len, k, done + k == n);
    memcpy(enc + len + BLK_HEADER, p + done, k);
    len += BLK_HEADER + k;
    done += k;
  } while (done < n);
  memset(&r, 0, sizeof r);
  r.payload = malloc(len + 1);
  if (r.payload == NULL) {
    abort();
  }
  streaming(enc, len, piece, &r);
  if (r.bad || r.nends != 1 || r.len != n || r.stop != len ||
      memcmp(r.payload, p, n) != 0) {
    abort();
  }
  free(r.payload);
  free(enc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct result ref, str;
  size_t piece;
  if (size < 2) {
    return 0;
  }
  piece = pieces[data[0] & 7u];
  memset(&ref, 0, sizeof ref);
  memset(&str, 0, sizeof str);
  ref.payload = malloc(size);
  str.payload = malloc(size);
  if (ref.payload == NULL || str.payload == NULL) {
    abort();
  }
  reference(data + 2, size - 2, &ref);
  streaming(data + 2, size - 2, piece, &str);
  same(&ref, &str);
  free(ref.payload);
  free(str.payload);
  round_trip(data + 2, size - 2, writes[data[1] & 7u], piece);
  return 0;
}
