/* fclient.h - an ftpc client over the in-memory transport, as ftpc's main()
 * sets it up, logged in already: the client targets start from here. */
#ifndef FUZZ_FCLIENT_H
#define FUZZ_FCLIENT_H

#include "client.h"
#include "memxp.h"

struct fclient {
  struct copts o;
  struct client cl;
};

/* Stdout (the event lines) to /dev/null; once per process. */
void fclient_init(void);
/* Start a client of variant v on the script data[0..size): the control
 * connection is open, downloads go to tree_outdir(). */
void fclient_begin(struct fclient *f, enum variant v, const uint8_t *data,
                   size_t size, const struct memxp_cfg *cfg);
/* Close everything and empty the download folder. */
void fclient_end(struct fclient *f);

#endif
