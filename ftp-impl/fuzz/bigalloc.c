/* bigalloc.c - large blocks of sys_malloc() kept for the next run, for the
 * targets that link it (-Wl,--wrap= each of sys_malloc, free and realloc).
 *
 * Every run of the session and client targets takes a 1 MiB block or two
 * (ctrlconn.c's receive chunk, dataio.c's upload block) and frees it again.
 * ASan serves a block that large from mmap() and returns it to its
 * quarantine on free(): each run paid for a mapping, its page faults and
 * the poisoning of its shadow, more than the run's own work in the client
 * targets.  Here a freed large block is kept instead, poisoned (an access
 * after the free is still reported, as use-after-poison), and handed out
 * again by the next sys_malloc() of the same size.  The block stays one
 * heap allocation of ASan's with its redzones, so an overflow is reported
 * as before; freeing a kept block twice aborts.  A block in use is held
 * only under a hidden pointer, so LeakSanitizer still sees a block the
 * program lost (at the latest when the process exits: libFuzzer's check
 * after each run counts malloc and free calls, and a reused block makes
 * neither). */
#include <sanitizer/asan_interface.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define BIG_MIN (128u * 1024u) /* larger blocks come from mmap in ASan */
#define SLOTS 8

void *__real_sys_malloc(size_t n);
void *__wrap_sys_malloc(size_t n);
void __real_free(void *p);
void __wrap_free(void *p);
void *__real_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n);

static const uintptr_t HIDE = (uintptr_t)0xa5a5a5a5a5a5a5a5ull;

static struct slot {
  size_t size;     /* 0: slot empty */
  uintptr_t inuse; /* the block, hidden, while the program holds it */
  void *kept;      /* the block while it waits for the next run */
} slots[SLOTS];

static struct slot *held(const void *p) {
  size_t i;
  for (i = 0; i < SLOTS; i++) {
    if (slots[i].size != 0 && slots[i].inuse == ((uintptr_t)p ^ HIDE)) {
      return &slots[i];
    }
  }
  return NULL;
}

void *__wrap_sys_malloc(size_t n) {
  size_t i;
  void *p;
  if (n < BIG_MIN) {
    return __real_sys_malloc(n);
  }
  for (i = 0; i < SLOTS; i++) {
    if (slots[i].size == n && slots[i].kept != NULL) {
      p = slots[i].kept;
      slots[i].kept = NULL;
      slots[i].inuse = (uintptr_t)p ^ HIDE;
      ASAN_UNPOISON_MEMORY_REGION(p, n);
      return p;
    }
  }
  p = __real_sys_malloc(n);
  for (i = 0; i < SLOTS; i++) {
    if (slots[i].size == 0) {
      slots[i].size = n;
      slots[i].inuse = (uintptr_t)p ^ HIDE;
      break;
    }
  }
  return p;
}

void __wrap_free(void *p) {
  struct slot *s;
  size_t i;
  if (p != NULL) {
    for (i = 0; i < SLOTS; i++) {
      if (slots[i].kept == p) {
        (void)fputs("bigalloc: double free of a kept block\n", stderr);
        abort();
      }
    }
    s = held(p);
    if (s != NULL) {
      s->inuse = 0;
      s->kept = p;
      ASAN_POISON_MEMORY_REGION(p, s->size);
      return;
    }
  }
  __real_free(p);
}

void *__wrap_realloc(void *p, size_t n) {
  struct slot *s = p != NULL ? held(p) : NULL;
  size_t i;
  for (i = 0; p != NULL && i < SLOTS; i++) {
    if (slots[i].kept == p) {
      (void)fputs("bigalloc: realloc of a freed block\n", stderr);
      abort();
    }
  }
  if (s != NULL) {
    s->size = 0; /* the block leaves the cache */
    s->inuse = 0;
  }
  return __real_realloc(p, n);
}
