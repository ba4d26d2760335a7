/* ftpc.c - the scriptable FTP client: connect, log in, run the commands
 * given on the command line in order, print one JSON event per line,
 * exit 0 only if everything succeeded (1: failure, reason on stderr). */
#define _GNU_SOURCE
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blockdata.h"
#include "client.h"
#include "events.h"
#include "stackevents.h"
#include "sysutil.h"

static void on_reply(void *ctx, const struct reply *r) {
  struct client *cl = ctx;
  if (r->code == 150 && strcmp(r->cmd, "NLST") == 0 && cl->t_nlst_150 == 0) {
    struct event e;
    cl->t_nlst_150 = r->t;
    ev_begin_at(&e, "nlst_150", r->t);
    ev_end(&e);
  }
  if (r->code == 226) {
    cl->t_last_226 = r->t;
    (void)str_copy(cl->last_226_cmd, sizeof cl->last_226_cmd, r->cmd);
  }
}

static int command(struct client *cl, const char *cmd, const char *arg,
                   struct reply *r) {
  if (ctrl_send(&cl->cc, cmd, arg) != 0 || ctrl_reply(&cl->cc, r) != 0) {
    return client_fail(cl, "%s", cl->cc.error);
  }
  return 0;
}

static int login(struct client *cl) {
  struct reply r;
  if (ctrl_reply(&cl->cc, &r) != 0) {
    return client_fail(cl, "no greeting: %s", cl->cc.error);
  }
  if (r.code != 220) {
    return client_fail(cl, "server refused the session: %d %s", r.code, r.text);
  }
  if (command(cl, "USER", cl->o->user, &r) != 0) {
    return -1;
  }
  if (r.code == 331 && command(cl, "PASS", cl->o->pass, &r) != 0) {
    return -1;
  }
  if (r.code != 230) {
    return client_fail(cl, "login refused: %d %s", r.code, r.text);
  }
  if (command(cl, "TYPE", "I", &r) != 0) {
    return -1;
  }
  if (r.code != 200) {
    return client_fail(cl, "TYPE I refused: %d %s", r.code, r.text);
  }
  if (copts_ms(cl->o)) {
    unsigned in = 0, out = 0;
    if (xp_streams(&cl->cc.c, &in, &out) != 0 || in < 2 || out < 2) {
      return client_fail(cl, "association has %u in / %u out streams, need 2",
                         in, out);
    }
    if (command(cl, "OPTS", "MSTREAM ON", &r) != 0) {
      return -1;
    }
    if (r.code != 200) {
      return client_fail(cl, "server refused multistreaming: %d %s", r.code,
                         r.text);
    }
  }
  if (copts_xftp(cl->o)) {
    return xftp_setup(cl);
  }
  return copts_block(cl->o) ? bd_open(cl) : 0;
}

/* The variants whose transfers go through the pipelined engine. */
static int engine(const struct client *cl) {
  return copts_ms(cl->o) || copts_block(cl->o);
}

static int list(struct client *cl, const char *cmd, const char *arg,
                struct buf *out) {
  if (copts_xftp(cl->o)) {
    return xftp_list(cl, cmd, arg, out);
  }
  return engine(cl) ? ms_list(cl, cmd, arg, out) : xfer_list(cl, cmd, arg, out);
}

/* Split a listing into lines (CR LF or LF). Returns the count. */
static size_t split_lines(struct buf *b, char ***lines_out) {
  size_t n = 0, cap = 0, i, start = 0;
  char **lines = NULL;
  for (i = 0; i <= b->len; i++) {
    if (i == b->len || b->data[i] == '\n') {
      size_t end = i;
      if (end > start && b->data[end - 1] == '\r') {
        end--;
      }
      if (end > start) {
        if (n == cap) {
          char **nl;
          cap = cap ? cap * 2 : 64;
          nl = realloc(lines, cap * sizeof *lines);
          if (nl == NULL) {
            die("out of memory");
          }
          lines = nl;
        }
        b->data[end] = '\0';
        lines[n++] = b->data + start;
      }
      start = i + 1;
    }
  }
  *lines_out = lines;
  return n;
}

/* One `listing` event per 64 KiB line at most: each carries `first` (index
 * of its first entry) and as many entries as fit, so a listing of any size
 * comes through whole.  An entry too long for any event fails the command. */
static int emit_listing(struct client *cl, const char *cmd, size_t bytes,
                        char **lines, size_t n) {
  size_t i = 0;
  do {
    struct event e;
    size_t first = i;
    ev_begin(&e, "listing");
    ev_str(&e, "cmd", cmd);
    ev_u64(&e, "bytes", bytes);
    ev_u64(&e, "count", n);
    ev_u64(&e, "first", first);
    ev_array_begin(&e, "entries");
    while (i < n && ev_array_try(&e, lines[i], 8) == 0) {
      i++;
    }
    if (i == first && i < n) {
      return client_fail(cl, "%s: entry %zu is too long to report (%zu bytes)",
                         cmd, i, strlen(lines[i]));
    }
    ev_array_end(&e);
    ev_end(&e);
  } while (i < n);
  return 0;
}

/* A listing is text: NUL bytes in it are refused, not cut at. */
static int check_listing(struct client *cl, const char *cmd,
                         const struct buf *b) {
  if (b->len > 0 && memchr(b->data, '\0', b->len) != NULL) {
    return client_fail(cl, "%s listing holds NUL bytes", cmd);
  }
  return 0;
}

static int do_list(struct client *cl, const char *cmd, const char *arg) {
  struct buf b;
  char **lines = NULL;
  size_t n, bytes;
  int rc;
  buf_init(&b, 64u << 20);
  rc = list(cl, cmd, arg, &b);
  if (rc == 0) {
    rc = check_listing(cl, cmd, &b);
  }
  if (rc == 0) {
    bytes = b.len;
    n = split_lines(&b, &lines);
    rc = emit_listing(cl, cmd, bytes, lines, n);
  }
  free(lines);
  buf_free(&b);
  return rc;
}

/* skip (mget): a name the server refuses with 550 before any data is
 * reported and skipped; any other failure ends the session. */
static int get_files(struct client *cl, char **names, size_t n, int skip) {
  size_t i;
  if (engine(cl)) {
    return ms_get(cl, names, n, copts_pipelined(cl->o), skip);
  }
  for (i = 0; i < n; i++) {
    if ((copts_xftp(cl->o) ? xftp_get(cl, names[i]) : xfer_get(cl, names[i])) ==
        0) {
      continue;
    }
    if (!skip || !cl->refused) {
      return -1;
    }
    client_skip(cl, names[i]);
  }
  return 0;
}

/* An NLST name mget may fetch: its last component is neither "", "." nor
 * "..", matches the glob (FNM_PERIOD: a leading dot only matches a dot, as
 * in the shell) and holds no control character (it goes into a command).
 * A matching name that is absolute or climbs with ".." is refused.
 * 1 wanted, 0 not, -1 refused (cl->error set). */
static int mget_wants(struct client *cl, const char *glob, const char *line,
                      const char **base_out) {
  const char *base = strrchr(line, '/');
  const unsigned char *p;
  base = base ? base + 1 : line;
  *base_out = base;
  if (base[0] == '\0' || strcmp(base, ".") == 0 || strcmp(base, "..") == 0 ||
      fnmatch(glob, base, FNM_PERIOD) != 0) {
    return 0;
  }
  for (p = (const unsigned char *)line; *p != '\0'; p++) {
    if (*p < 0x20 || *p == 0x7f) {
      return client_fail(cl, "NLST entry with a control character refused");
    }
  }
  if (line[0] == '/' || strcmp(line, "..") == 0 ||
      strncmp(line, "../", 3) == 0 || strstr(line, "/../") != NULL) {
    return client_fail(cl,
                       "NLST entry %.200s refused: a path outside the "
                       "listed folder",
                       line);
  }
  return 1;
}

/* mget: NLST of the pattern's directory, match, then get each file. */
static int do_mget(struct client *cl, const char *pattern) {
  char dir[1024] = "";
  const char *glob = pattern;
  const char *slash = strrchr(pattern, '/');
  struct buf b;
  char **lines = NULL, **names;
  size_t n, i, k = 0;
  int rc;
  if (slash != NULL) {
    size_t dl = (size_t)(slash - pattern);
    if (dl >= sizeof dir) {
      return client_fail(cl, "pattern too long");
    }
    memcpy(dir, pattern, dl);
    dir[dl] = '\0';
    glob = slash + 1;
  }
  buf_init(&b, 64u << 20);
  if (list(cl, "NLST", dir, &b) != 0) {
    buf_free(&b);
    return -1;
  }
  if (check_listing(cl, "NLST", &b) != 0) {
    buf_free(&b);
    return -1;
  }
  n = split_lines(&b, &lines);
  names = calloc(n ? n : 1, sizeof *names);
  if (names == NULL) {
    die("out of memory");
  }
  rc = 0;
  for (i = 0; i < n && rc == 0; i++) {
    const char *base;
    char full[1024];
    int want = mget_wants(cl, glob, lines[i], &base);
    if (want <= 0) {
      rc = want;
      continue;
    }
    if (str_fmt(full, sizeof full, "%s%s%s", dir, dir[0] ? "/" : "", base) !=
        0) {
      rc = client_fail(cl, "NLST entry too long (%zu bytes)", strlen(base));
    } else if ((names[k++] = strdup(full)) == NULL) {
      die("out of memory");
    }
  }
  if (rc == 0) {
    rc = k == 0 ? client_fail(cl, "mget %s: no file matches", pattern)
                : get_files(cl, names, k, 1);
  }
  for (i = 0; i < k; i++) {
    free(names[i]);
  }
  free(names);
  free(lines);
  buf_free(&b);
  return rc;
}

static int run_commands(struct client *cl) {
  char **c = cl->o->cmds;
  int i = 0, n = cl->o->ncmds;
  while (i < n) {
    const char *verb = c[i++];
    const char *arg = i < n ? c[i] : NULL;
    int rc;
    if (strcmp(verb, "ls") == 0 || strcmp(verb, "dir") == 0) {
      /* optional argument: take it unless it is the next command */
      const char *a = "";
      if (arg != NULL && !copts_is_command(arg)) {
        a = arg;
        i++;
      }
      rc = do_list(cl, verb[0] == 'l' ? "NLST" : "LIST", a);
    } else if (arg == NULL) {
      return client_fail(cl, "command %s needs an argument", verb);
    } else if (i++, strcmp(verb, "get") == 0) {
      rc = get_files(cl, (char **)&c[i - 1], 1, 0);
    } else if (strcmp(verb, "mget") == 0) {
      rc = do_mget(cl, arg);
    } else if (strcmp(verb, "put") == 0) {
      rc = copts_xftp(cl->o)    ? client_fail(cl, "put: xftp downloads only")
           : copts_ms(cl->o)    ? ms_put(cl, arg)
           : copts_block(cl->o) ? bd_put(cl, arg)
                                : xfer_put(cl, arg);
    } else {
      return client_fail(cl, "unknown command %s", verb);
    }
    if (rc != 0) {
      return -1;
    }
  }
  return 0;
}

static void finish_events(struct client *cl, int ok) {
  struct event e;
  if (cl->t_last_226 > 0) {
    ev_begin_at(&e, "last_226", cl->t_last_226);
    ev_str(&e, "cmd", cl->last_226_cmd);
    ev_end(&e);
  }
  if (cl->t_nlst_150 > 0 && cl->t_last_226 > cl->t_nlst_150) {
    ev_begin(&e, "transfer_time");
    ev_num(&e, "seconds", cl->t_last_226 - cl->t_nlst_150);
    ev_end(&e);
  }
  if (!ok) {
    ev_begin(&e, "error");
    ev_str(&e, "reason", cl->error);
    ev_end(&e);
  }
  ev_begin(&e, "session_end");
  ev_str(&e, "status", !ok ? "error" : cl->skipped ? "partial" : "ok");
  xp_stack_end_fields(&e, cl->proto, &cl->o->xp);
  ev_end(&e);
}

int main(int argc, char **argv) {
  struct copts o;
  struct client cl;
  struct event e;
  struct reply r;
  int ok;
  sys_set_progname("ftpc");
  copts_parse(argc, argv, &o);
  sys_ignore_sigpipe();
  memset(&cl, 0, sizeof cl);
  cl.o = &o;
  cl.cc.c.fd = -1;
  cl.data.fd = -1;
  cl.proto = copts_sctp(&o) ? XP_SCTP : XP_TCP;
  cl.timeout_ms = o.timeout_s * 1000;
  ev_begin(&e, "session_start");
  ev_str(&e, "variant", o.variant_name);
  ev_str(&e, "server", o.host);
  ev_int(&e, "timeout_s", o.timeout_s);
  ev_int(&e, "open_timeout_s", o.open_s);
  ev_int(&e, "open_retries", o.retries);
  ev_end(&e);
  if (addr_parse_hostport(o.host, 21, &cl.server) != 0) {
    ok = client_fail(&cl, "cannot resolve %s", o.host) == 0;
  } else if (ctrl_open(&cl.cc, cl.proto, &cl.server, copts_bind(&o), &o.xp,
                       cl.timeout_ms) != 0) {
    ok = client_fail(&cl, "%s", cl.cc.error) == 0;
  } else {
    cl.cc.on_reply = on_reply;
    cl.cc.reply_ctx = &cl;
    ev_begin(&e, "connected");
    ev_str(&e, "transport", xp_proto_name(cl.proto));
    xp_stack_fields(&e, &cl.cc.c, &o.xp);
    ev_end(&e);
    ok = login(&cl) == 0 && run_commands(&cl) == 0;
    if (ok && command(&cl, "QUIT", "", &r) != 0) {
      ok = 1; /* everything was transferred; a lost goodbye is no failure */
    }
  }
  finish_events(&cl, ok);
  if (cl.data.fd >= 0) {
    xp_close(&cl.data);
  }
  ctrl_close(&cl.cc);
  if (!ok) {
    fprintf(stderr, "ftpc: %s\n", cl.error);
    return 1;
  }
  if (cl.skipped > 0) {
    fprintf(stderr, "ftpc: mget skipped %zu name(s) the server refused\n",
            cl.skipped);
    return 3;
  }
  return 0;
}
