/* events.c - JSON event lines (see events.h). */
#include "events.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "str.h"
#include "sysutil.h"

static void add(struct event *e, const char *s) {
  if (str_append(e->text, sizeof e->text, s) != 0) {
    e->overflow = 1;
  }
}

static void add_key(struct event *e, const char *key) {
  char q[128];
  if (str_json(q, sizeof q, key) != 0) {
    e->overflow = 1;
    return;
  }
  add(e, ",");
  add(e, q);
  add(e, ":");
}

void ev_begin_at(struct event *e, const char *name, double t) {
  e->overflow = 0;
  if (str_fmt(e->text, sizeof e->text, "{\"t\":%.6f", t) != 0) {
    e->overflow = 1;
  }
  ev_str(e, "event", name);
}

void ev_begin(struct event *e, const char *name) {
  ev_begin_at(e, name, sys_mono_now());
}

void ev_str(struct event *e, const char *key, const char *val) {
  char q[2048];
  add_key(e, key);
  if (str_json(q, sizeof q, val) != 0) {
    add(e, "\"(too long)\"");
    return;
  }
  add(e, q);
}

void ev_int(struct event *e, const char *key, int64_t val) {
  char n[32];
  add_key(e, key);
  (void)str_fmt(n, sizeof n, "%" PRId64, val);
  add(e, n);
}

void ev_u64(struct event *e, const char *key, uint64_t val) {
  char n[32];
  add_key(e, key);
  (void)str_fmt(n, sizeof n, "%" PRIu64, val);
  add(e, n);
}

void ev_num(struct event *e, const char *key, double val) {
  char n[48];
  add_key(e, key);
  (void)str_fmt(n, sizeof n, "%.6f", val);
  add(e, n);
}

void ev_bool(struct event *e, const char *key, int val) {
  add_key(e, key);
  add(e, val ? "true" : "false");
}

void ev_null(struct event *e, const char *key) {
  add_key(e, key);
  add(e, "null");
}

void ev_array_begin(struct event *e, const char *key) {
  add_key(e, key);
  add(e, "[");
}

void ev_array_str(struct event *e, const char *val) {
  char q[1024];
  size_t len = strlen(e->text);
  if (len > 0 && e->text[len - 1] != '[') {
    add(e, ",");
  }
  if (str_json(q, sizeof q, val) != 0) {
    e->overflow = 1;
    return;
  }
  add(e, q);
}

int ev_array_try(struct event *e, const char *val, size_t reserve) {
  size_t len = strlen(e->text), vlen = strlen(val);
  size_t cap = vlen * 6 + 3; /* every byte escaped as \u00XX, quotes, NUL */
  char *q = sys_malloc(cap);
  int rc = -1;
  if (str_json(q, cap, val) == 0 &&
      len + 1 + strlen(q) + reserve < sizeof e->text) {
    if (len > 0 && e->text[len - 1] != '[') {
      add(e, ",");
    }
    add(e, q);
    rc = 0;
  }
  free(q);
  return rc;
}

void ev_array_end(struct event *e) { add(e, "]"); }

void ev_end(struct event *e) {
  add(e, "}");
  if (e->overflow) {
    char head[64];
    /* keep the time and name, drop the rest */
    const char *comma = strchr(e->text + 1, ',');
    const char *comma2 = comma ? strchr(comma + 1, ',') : NULL;
    size_t n = comma2 ? (size_t)(comma2 - e->text) : 0;
    if (n == 0 || n >= sizeof head) {
      return;
    }
    memcpy(head, e->text, n);
    head[n] = '\0';
    printf("%s,\"truncated\":true}\n", head);
  } else {
    printf("%s\n", e->text);
  }
  fflush(stdout);
}
