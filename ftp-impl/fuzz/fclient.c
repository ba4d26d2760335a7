/* fclient.c - the client targets' ftpc session (see fclient.h). */
#include "fclient.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tree.h"

void fclient_init(void) {
  if (freopen("/dev/null", "w", stdout) == NULL) {
    abort();
  }
  (void)tree_outdir();
}

static const char *const variant_names[] = {"tcp", "sctp-naive", "sctp-ms",
                                            "sctp-ms-cp", "tcp-pipelined"};

void fclient_begin(struct fclient *f, enum variant v, const uint8_t *data,
                   size_t size, const struct memxp_cfg *cfg) {
  struct memxp_cfg c = *cfg;
  memset(f, 0, sizeof *f);
  f->o.variant = v;
  (void)snprintf(f->o.variant_name, sizeof f->o.variant_name, "%s",
                 variant_names[v]);
  (void)snprintf(f->o.host, sizeof f->o.host, "127.0.0.1:21");
  (void)snprintf(f->o.out_dir, sizeof f->o.out_dir, "%s", tree_outdir());
  (void)snprintf(f->o.user, sizeof f->o.user, "anonymous");
  (void)snprintf(f->o.pass, sizeof f->o.pass, "ftpc@");
  f->o.timeout_s = 1;
  f->o.chunk = 4096;
  xp_opts_default(&f->o.xp);
  c.proto = v == V_TCP || v == V_TCP_PIPELINED ? XP_TCP : XP_SCTP;
  memxp_begin(data, size, &c);
  f->cl.o = &f->o;
  f->cl.data.fd = -1;
  f->cl.proto = c.proto;
  f->cl.timeout_ms = 1000;
  if (addr_parse_hostport(f->o.host, 21, &f->cl.server) != 0 ||
      ctrl_open(&f->cl.cc, f->cl.proto, &f->cl.server, NULL, &f->o.xp,
                f->cl.timeout_ms) != 0) {
    abort();
  }
}

void fclient_end(struct fclient *f) {
  if (f->cl.data.fd >= 0) {
    xp_close(&f->cl.data);
  }
  ctrl_close(&f->cl.cc);
  memxp_end();
  tree_outdir_clear();
}
