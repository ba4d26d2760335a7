/* usxsysctl.c - usrsctp's sysctls (usxsysctl.h): the ones that decide how
 * its SCTP sends, acknowledges and times out, with usrsctp's own setter and
 * getter each. */
#include "usxsysctl.h"

#include <errno.h>
#include <string.h>
#include <usrsctp.h>

struct usx_sysctl {
  const char *name;
  int (*set)(uint32_t);
  uint32_t (*get)(void);
};

#define USX_SYSCTL(f)                                                          \
  { #f, usrsctp_sysctl_set_##f, usrsctp_sysctl_get_##f }

static const struct usx_sysctl table[] = {
    USX_SYSCTL(sctp_max_burst_default),
    USX_SYSCTL(sctp_fr_max_burst_default),
    USX_SYSCTL(sctp_use_cwnd_based_maxburst),
    USX_SYSCTL(sctp_initial_cwnd),
    USX_SYSCTL(sctp_L2_abc_variable),
    USX_SYSCTL(sctp_default_cc_module),
    USX_SYSCTL(sctp_cmt_on_off),
    USX_SYSCTL(sctp_nrsack_enable),
    USX_SYSCTL(sctp_ecn_enable),
    USX_SYSCTL(sctp_pr_enable),
    USX_SYSCTL(sctp_buffer_splitting),
    USX_SYSCTL(sctp_delayed_sack_time_default),
    USX_SYSCTL(sctp_sack_freq_default),
    USX_SYSCTL(sctp_enable_sack_immediately),
    USX_SYSCTL(sctp_rto_min_default),
    USX_SYSCTL(sctp_rto_max_default),
    USX_SYSCTL(sctp_rto_initial_default),
    USX_SYSCTL(sctp_assoc_rtx_max_default),
    USX_SYSCTL(sctp_path_rtx_max_default),
    USX_SYSCTL(sctp_path_pf_threshold),
    USX_SYSCTL(sctp_max_retran_chunk),
    USX_SYSCTL(sctp_heartbeat_interval_default),
};

#define TABLE_SIZE (sizeof table / sizeof table[0])

size_t usx_sysctl_count(void) { return TABLE_SIZE; }

const char *usx_sysctl_name(size_t id) {
  return id < TABLE_SIZE ? table[id].name : "";
}

int usx_sysctl_find(const char *name) {
  size_t i;
  for (i = 0; i < TABLE_SIZE; i++) {
    if (strcmp(table[i].name, name) == 0) {
      return (int)i;
    }
  }
  return -1;
}

int usx_sysctl_apply(const struct usx_sysctl_set *set, size_t *bad) {
  int i;
  for (i = 0; i < set->n; i++) {
    size_t id = (size_t)set->id[i];
    if (id >= TABLE_SIZE || table[id].set(set->value[i]) != 0) {
      *bad = id;
      errno = EINVAL;
      return -1;
    }
  }
  return 0;
}

uint32_t usx_sysctl_get(size_t id) {
  return id < TABLE_SIZE ? table[id].get() : 0;
}
