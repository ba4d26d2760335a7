/* fuzz_extblock.c - the extended block mode decoder and the coverage check
 * (extblock.c), which ftpc runs on every data connection of the xftp
 * variant.
 *
 * In: byte 0 how many bytes one feed holds (whole, 1, 2, 3, 7, 16, 100,
 * 4096), then the bytes of one data connection.
 * Out: nothing; aborts when the decoder, fed in pieces, disagrees with a
 * whole-buffer parse of GFD.20's block layout (the payload, the offset of
 * every payload run, where and why it stops, the EOF's count), when it
 * returns more than it was given, or when ext_ranges_check disagrees with a
 * byte map of the offsets the runs covered. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "extblock.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAP 4096u

static const size_t pieces[] = {0, 1, 2, 3, 7, 16, 100, 4096};

struct run {
  uint64_t off, len;
};

struct result {
  uint8_t *payload;
  size_t len;
  struct run *runs;
  size_t nruns;
  enum ext_state state;
  uint64_t eof_count;
};

static void add_run(struct result *r, const uint8_t *p, uint64_t off,
                    size_t n) {
  if (n == 0) {
    return;
  }
  memcpy(r->payload + r->len, p, n);
  r->len += n;
  if (r->nruns > 0 &&
      r->runs[r->nruns - 1].off + r->runs[r->nruns - 1].len == off) {
    r->runs[r->nruns - 1].len += n;
    return;
  }
  r->runs[r->nruns].off = off;
  r->runs[r->nruns].len = n;
  r->nruns++;
}

static uint64_t get64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) {
    v = (v << 8) | p[i];
  }
  return v;
}

/* A block header is refused for what GFD.20 gives no file meaning to. */
static int refused(unsigned desc, uint64_t count, uint64_t off) {
  return (desc & (EXT_EOR | EXT_ERRORS | EXT_RESTART)) != 0 ||
         ((desc & (EXT_EOF | EXT_EOD)) != 0 && count != 0) ||
         ((desc & EXT_EOF) != 0 && (off == 0 || off > EXT_MAX_CONNS)) ||
         ((desc & EXT_CLOSE) != 0 && (desc & EXT_EOD) == 0) ||
         count > UINT64_MAX - off;
}

/* The reference: the whole input at once. */
static void reference(const uint8_t *p, size_t n, struct result *r) {
  size_t i = 0;
  r->state = EXT_MORE;
  while (n - i >= EXT_HEADER) {
    unsigned desc = p[i];
    uint64_t count = get64(p + i + 1), off = get64(p + i + 9);
    size_t have = n - i - EXT_HEADER;
    if (refused(desc, count, off)) {
      r->state = EXT_BAD;
      return;
    }
    if ((desc & EXT_EOF) != 0) {
      r->eof_count = off;
    }
    if ((desc & EXT_EOD) != 0) {
      r->state = EXT_ENDED;
      return;
    }
    add_run(r, p + i + EXT_HEADER, off, have < count ? have : (size_t)count);
    if (have < count) {
      return;
    }
    i += EXT_HEADER + (size_t)count;
  }
}

static void streaming(const uint8_t *p, size_t n, size_t piece,
                      struct result *r) {
  struct ext_dec d;
  size_t i = 0;
  ext_reset(&d);
  while (i < n && d.state == EXT_MORE) {
    size_t feed = piece == 0 || n - i < piece ? n - i : piece;
    size_t off = 0;
    while (off < feed && d.state == EXT_MORE) {
      const char *out;
      size_t dlen;
      uint64_t at;
      size_t used = ext_decode(&d, (const char *)p + i + off, feed - off, &out,
                               &dlen, &at);
      if (used > feed - off || (used == 0 && d.state == EXT_MORE)) {
        abort();
      }
      add_run(r, (const uint8_t *)out, at, dlen);
      off += used;
    }
    i += off;
  }
  r->state = d.state;
  r->eof_count = d.eof_count;
}

static void same(const struct result *a, const struct result *b) {
  if (a->len != b->len || memcmp(a->payload, b->payload, a->len) != 0 ||
      a->nruns != b->nruns ||
      memcmp(a->runs, b->runs, a->nruns * sizeof *a->runs) != 0 ||
      a->state != b->state || a->eof_count != b->eof_count) {
    abort();
  }
}

/* ext_ranges_check against a byte map, for the runs inside the map. */
static void coverage(const struct result *r) {
  static uint8_t map[MAP];
  struct ext_ranges g;
  uint64_t total = 0;
  int exact = 1;
  char why[128];
  memset(map, 0, sizeof map);
  ext_ranges_init(&g, 1u << 16);
  for (size_t k = 0; k < r->nruns; k++) {
    if (r->runs[k].off + r->runs[k].len > MAP) {
      continue;
    }
    if (ext_ranges_add(&g, r->runs[k].off, r->runs[k].len) != 0) {
      abort();
    }
    for (uint64_t b = r->runs[k].off; b < r->runs[k].off + r->runs[k].len;
         b++) {
      map[b]++;
    }
    total += r->runs[k].len;
  }
  for (uint64_t b = 0; b < MAP; b++) {
    exact &= b < total ? map[b] == 1 : map[b] == 0;
  }
  if ((ext_ranges_check(&g, 0, total, why, sizeof why) == 0) != exact) {
    abort();
  }
  ext_ranges_free(&g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct result whole, fed;
  if (size < 1) {
    return 0;
  }
  memset(&whole, 0, sizeof whole);
  memset(&fed, 0, sizeof fed);
  whole.payload = malloc(size);
  fed.payload = malloc(size);
  whole.runs = calloc(size + 1, sizeof *whole.runs);
  fed.runs = calloc(size + 1, sizeof *fed.runs);
  if (whole.payload == NULL || fed.payload == NULL || whole.runs == NULL ||
      fed.runs == NULL) {
    abort();
  }
  reference(data + 1, size - 1, &whole);
  streaming(data + 1, size - 1, pieces[data[0] % 8], &fed);
  same(&whole, &fed);
  coverage(&fed);
  free(whole.payload);
  free(fed.payload);
  free(whole.runs);
  free(fed.runs);
  return 0;
}
