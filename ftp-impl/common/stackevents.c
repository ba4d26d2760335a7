/* stackevents.c - the SCTP stack's record in events (see stackevents.h). */
#include "stackevents.h"

#include "str.h"
#include "usx.h"
#include "usxsysctl.h"

/* Every sysctl of usxsysctl.h's table as usrsctp holds it, NAME=VALUE. */
static void usrsctp_sysctls(struct event *e) {
  size_t i;
  ev_array_begin(e, "usrsctp_sysctls");
  for (i = 0; i < usx_sysctl_count(); i++) {
    char item[96];
    if (str_fmt(item, sizeof item, "%s=%u", usx_sysctl_name(i),
                (unsigned)usx_sysctl_get(i)) == 0) {
      ev_array_str(e, item);
    }
  }
  ev_array_end(e);
}

void xp_stack_fields(struct event *e, const struct xp_conn *c,
                     const struct xp_opts *o) {
  struct usx_settings us;
  ev_str(e, "stack", xp_stack_name(c));
  if (!usx_is(c->fd)) {
    return;
  }
  usx_settings(c->fd, &us);
  if (us.path_mtu < 0) {
    ev_null(e, "path_mtu");
  } else {
    ev_int(e, "path_mtu", us.path_mtu);
  }
  usrsctp_sysctls(e);
  ev_int(e, "udp_port", usx_udp_port(o));
  if (o->peer_udp_port > 0) {
    ev_int(e, "peer_udp_port", o->peer_udp_port);
  } else {
    ev_null(e, "peer_udp_port");
  }
}

void xp_stack_end_fields(struct event *e, enum xp_proto p,
                         const struct xp_opts *o) {
  if (p == XP_SCTP && o->stack == XP_STACK_USRSCTP) {
    ev_u64(e, "watch_wakeups", usx_watch_wakeups());
  }
}
