/* bulkclock.c - the clock of sample events (bulkclock.h). */
#include "bulkclock.h"

void bulk_clock_start(struct bulk_clock *k, int64_t now_ms, int period_ms) {
  k->period_ms = period_ms;
  k->next_ms = now_ms + period_ms;
}

int bulk_clock_due(struct bulk_clock *k, int64_t now_ms) {
  if (now_ms < k->next_ms) {
    return 0;
  }
  k->next_ms += k->period_ms;
  if (k->next_ms <= now_ms) {
    k->next_ms += (now_ms - k->next_ms) / k->period_ms * k->period_ms;
    k->next_ms += k->period_ms;
  }
  return 1;
}
