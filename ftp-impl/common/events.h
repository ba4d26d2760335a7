/* events.h - the event lines of ftpc and bulkflow: one JSON object per line
 * on stdout, {"t":<CLOCK_MONOTONIC seconds>,"event":"<name>",...}, flushed at
 * once.  The schemas are documented in ftp-impl/EVENTS.md. */
#ifndef FTP_EVENTS_H
#define FTP_EVENTS_H

#include <stddef.h>
#include <stdint.h>

struct event {
  char text[65536];
  int overflow;
};

/* Start an event stamped now, or at time t (seconds, CLOCK_MONOTONIC). */
void ev_begin(struct event *e, const char *name);
void ev_begin_at(struct event *e, const char *name, double t);
void ev_str(struct event *e, const char *key, const char *val);
void ev_int(struct event *e, const char *key, int64_t val);
void ev_u64(struct event *e, const char *key, uint64_t val);
void ev_num(struct event *e, const char *key, double val);
void ev_bool(struct event *e, const char *key, int val);
void ev_null(struct event *e, const char *key);
/* Start / add to / end a JSON array of strings under key. */
void ev_array_begin(struct event *e, const char *key);
void ev_array_str(struct event *e, const char *val);
void ev_array_end(struct event *e);
/* Add val to the open array only if it fits with `reserve` bytes to spare
 * (for what the caller still adds); 0 added, -1 the event is unchanged. */
int ev_array_try(struct event *e, const char *val, size_t reserve);
/* Print the line (an event too large to print is replaced by a marker). */
void ev_end(struct event *e);

#endif
