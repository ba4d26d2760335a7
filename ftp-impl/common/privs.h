/* privs.h - giving up root after the listeners are bound (like vsftpd's
 * nopriv_user): ftpd started as root runs as an unprivileged user. */
#ifndef FTP_PRIVS_H
#define FTP_PRIVS_H

/* Started as root: become `user` ("" = nobody): supplementary groups, gid,
 * uid, each checked, and checked again (root cannot be regained); then the
 * served root must still be readable.  `user` "root" keeps the privileges
 * ftpd was started with, on purpose.  Not root: nothing ("", "root" or our
 * own name), any other user exit(2).  Any failure is
 * fatal: ftpd never serves with privileges it meant to drop. */
void privs_drop(const char *user, const char *root);

#endif
