/* checks.h - invariants shared by the fuzz targets. */
#ifndef FUZZ_CHECKS_H
#define FUZZ_CHECKS_H

/* Every reply the server sent on the control connection is a sequence of
 * lines ending "\r\n" with no other CR or LF, each "DDD " or "DDD-" or (inside
 * a multi-line reply) a continuation line; aborts otherwise. */
void check_replies(void);
/* With FUZZ_SHOW_REPLIES set in the environment, print what the server
 * sent on the control connection to stderr (to read what a seed does). */
void show_replies(void);
/* The lowest free descriptor number, to catch descriptors a run leaks. */
int lowest_free_fd(void);

#endif
