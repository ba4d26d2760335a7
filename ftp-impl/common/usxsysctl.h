/* usxsysctl.h - usrsctp's sysctls (its stack-wide settings, FreeBSD's
 * net.inet.sctp.*): the ones a run may set (`--usrsctp-sysctl NAME=VALUE`),
 * set once when usrsctp starts, and every one of them read back for the
 * record, so a run says which SCTP it ran whatever it set. */
#ifndef FTP_USXSYSCTL_H
#define FTP_USXSYSCTL_H

#include <stddef.h>
#include <stdint.h>

/* At most this many settings on one command line. */
#define USX_MAX_SYSCTLS 16

struct usx_sysctl_set {
  int id[USX_MAX_SYSCTLS]; /* index in the table (usx_sysctl_name) */
  uint32_t value[USX_MAX_SYSCTLS];
  int n;
};

/* How many sysctls the table holds, and each one's usrsctp name
 * ("sctp_max_burst_default"). */
size_t usx_sysctl_count(void);
const char *usx_sysctl_name(size_t id);
/* The table's index of name, or -1. */
int usx_sysctl_find(const char *name);
/* Set them all (after usrsctp_init).  -1 with errno EINVAL if usrsctp
 * refuses one (a value outside its range); *bad then names it. */
int usx_sysctl_apply(const struct usx_sysctl_set *set, size_t *bad);
/* The value usrsctp holds now. */
uint32_t usx_sysctl_get(size_t id);

#endif
