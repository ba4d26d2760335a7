/* sessionloop.h - one session's life: set up, run to its end, freed. */
#ifndef FTP_SESSIONLOOP_H
#define FTP_SESSIONLOOP_H

#include "session.h"
#include "transport.h"

void session_init(struct session *s, const struct xp_conn *ctrl);
void session_free(struct session *s);
/* Run one session to its end (the process's whole life after fork). */
void session_run(struct session *s);

#endif
