/* stackevents.h - which SCTP stack carries a connection, as event fields:
 * the same record from every program that takes --sctp-stack (xpargs.h). */
#ifndef FTP_STACKEVENTS_H
#define FTP_STACKEVENTS_H

#include "events.h"
#include "transport.h"

/* "stack" (kernel or usrsctp) and, for usrsctp, its path MTU, every sysctl
 * of usxsysctl.h's table as it holds it, and its UDP ports as the options
 * set them. */
void xp_stack_fields(struct event *e, const struct xp_conn *c,
                     const struct xp_opts *o);
/* At the end, on usrsctp: the wakeups its upcall missed (usx.h). */
void xp_stack_end_fields(struct event *e, enum xp_proto p,
                         const struct xp_opts *o);

#endif
