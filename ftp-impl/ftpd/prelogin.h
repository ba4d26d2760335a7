/* prelogin.h - the commands accepted before login (USER, PASS, ...). */
#ifndef FTP_PRELOGIN_H
#define FTP_PRELOGIN_H

#include "session.h"

void prelogin_command(struct session *s, const char *cmd, const char *arg);

#endif
