/* postlogin.h - the commands of a logged-in session. */
#ifndef FTP_POSTLOGIN_H
#define FTP_POSTLOGIN_H

#include "session.h"

/* Handle one command (cmd upper-cased, arg may be ""). */
void postlogin_command(struct session *s, const char *cmd, const char *arg);
/* The FEAT reply (also allowed before login). */
void postlogin_feat(struct session *s);
/* OPTS (also allowed before login). */
void postlogin_opts(struct session *s, const char *arg);

#endif
