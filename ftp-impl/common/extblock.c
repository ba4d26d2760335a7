/* extblock.c - extended block mode framing and coverage (see extblock.h). */
#include "extblock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void put64(unsigned char *p, uint64_t v) {
  for (int i = 7; i >= 0; i--) {
    p[i] = (unsigned char)(v & 0xffu);
    v >>= 8;
  }
}

static uint64_t get64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) {
    v = (v << 8) | p[i];
  }
  return v;
}

void ext_header(unsigned char out[EXT_HEADER], unsigned desc, uint64_t count,
                uint64_t offset) {
  out[0] = (unsigned char)(desc & 0xffu);
  put64(out + 1, count);
  put64(out + 9, offset);
}

void ext_reset(struct ext_dec *d) { memset(d, 0, sizeof *d); }

int ext_partial(const struct ext_dec *d) {
  return d->state == EXT_MORE && (d->have > 0 || d->left > 0);
}

static void bad(struct ext_dec *d, const char *why) {
  (void)snprintf(d->why, sizeof d->why, "%s (descriptor 0x%02x)", why, d->desc);
  d->state = EXT_BAD;
}

/* File structure, as ftpd sends it: data blocks, EOD (with or without the
 * close bit) and one EOF carrying the EOD count.  Record marks, restart
 * markers and "suspected errors" change what the payload means, so a
 * connection carrying them is refused rather than written into a file. */
static void start_block(struct ext_dec *d) {
  uint64_t count = get64(d->hdr + 1), offset = get64(d->hdr + 9);
  d->desc = d->hdr[0];
  d->have = 0;
  if ((d->desc & (EXT_EOR | EXT_ERRORS | EXT_RESTART)) != 0) {
    bad(d, "record, restart or error block in a file transfer");
  } else if ((d->desc & (EXT_EOF | EXT_EOD)) != 0 && count != 0) {
    bad(d, "data in an EOD or EOF block");
  } else if ((d->desc & EXT_EOF) != 0 &&
             (offset == 0 || offset > EXT_MAX_CONNS)) {
    bad(d, "EOF announcing an impossible number of connections");
  } else if ((d->desc & EXT_CLOSE) != 0 && (d->desc & EXT_EOD) == 0) {
    bad(d, "close without EOD");
  } else if (count > UINT64_MAX - offset) {
    bad(d, "block beyond the largest file offset");
  } else {
    if ((d->desc & EXT_EOF) != 0) {
      d->eof_count = offset;
    }
    d->left = count;
    d->at = offset;
    if ((d->desc & EXT_EOD) != 0) {
      d->state = EXT_ENDED;
    }
  }
}

size_t ext_decode(struct ext_dec *d, const char *in, size_t n,
                  const char **data, size_t *dlen, uint64_t *offset) {
  size_t used = 0;
  *data = in;
  *dlen = 0;
  *offset = d->at;
  if (d->state != EXT_MORE) {
    return 0;
  }
  if (d->left == 0) {
    while (used < n && d->have < EXT_HEADER) {
      d->hdr[d->have++] = (unsigned char)in[used++];
    }
    if (d->have < EXT_HEADER) {
      return used;
    }
    start_block(d);
    *offset = d->at;
    if (d->state != EXT_MORE || d->left == 0) {
      return used;
    }
  }
  *data = in + used;
  *dlen = (uint64_t)(n - used) < d->left ? n - used : (size_t)d->left;
  d->left -= *dlen;
  d->at += *dlen;
  d->payload += *dlen;
  used += *dlen;
  return used;
}

void ext_ranges_init(struct ext_ranges *g, size_t limit) {
  memset(g, 0, sizeof *g);
  g->limit = limit;
}

void ext_ranges_free(struct ext_ranges *g) {
  free(g->r);
  g->r = NULL;
  g->n = g->cap = 0;
}

int ext_ranges_add(struct ext_ranges *g, uint64_t offset, uint64_t length) {
  if (length == 0) {
    return 0;
  }
  if (g->n > 0 && g->r[g->n - 1][0] + g->r[g->n - 1][1] == offset) {
    g->r[g->n - 1][1] += length; /* the same block going on */
    return 0;
  }
  if (g->n == g->cap) {
    size_t cap = g->cap ? g->cap * 2 : 64;
    void *grown;
    if (g->cap >= g->limit) {
      return -1;
    }
    cap = cap > g->limit ? g->limit : cap;
    grown = realloc(g->r, cap * sizeof *g->r);
    if (grown == NULL) {
      return -1;
    }
    g->r = grown;
    g->cap = cap;
  }
  g->r[g->n][0] = offset;
  g->r[g->n][1] = length;
  g->n++;
  return 0;
}

static int by_offset(const void *a, const void *b) {
  const uint64_t *x = a, *y = b;
  return x[0] < y[0] ? -1 : x[0] > y[0];
}

int ext_ranges_check(struct ext_ranges *g, uint64_t start, uint64_t total,
                     char *why, size_t whycap) {
  uint64_t next = start;
  if (g->n > 1) {
    qsort(g->r, g->n, sizeof *g->r, by_offset);
  }
  for (size_t i = 0; i < g->n; i++) {
    if (g->r[i][0] != next) {
      (void)snprintf(
          why, whycap, "%s at byte %llu",
          g->r[i][0] < next ? "blocks overlap" : "bytes missing",
          (unsigned long long)(g->r[i][0] < next ? g->r[i][0] : next));
      return -1;
    }
    next += g->r[i][1];
  }
  if (next != start + total) {
    (void)snprintf(why, whycap, "blocks end at byte %llu of %llu",
                   (unsigned long long)next,
                   (unsigned long long)(start + total));
    return -1;
  }
  return 0;
}
