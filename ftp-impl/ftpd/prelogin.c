/* prelogin.c - login handling (see prelogin.h). */
#include "prelogin.h"

#include <string.h>

#include "cmdio.h"
#include "ftpcodes.h"
#include "logging.h"
#include "postlogin.h"
#include "str.h"
#include "tunables.h"

static int is_anon_name(const char *u) {
  return str_eq_nocase(u, "anonymous") || str_eq_nocase(u, "ftp");
}

static void cmd_user(struct session *s, const char *arg) {
  if (arg[0] == '\0') {
    (void)cmdio_reply(s, FTP_BADARG, "USER needs a name.");
    return;
  }
  (void)str_copy(s->user, sizeof s->user, arg);
  s->user_anon = is_anon_name(arg);
  s->user_ok = 1;
  (void)cmdio_reply(s, FTP_GIVEPWORD, "Please specify the password.");
}

static void cmd_pass(struct session *s, const char *arg) {
  int ok;
  if (!s->user_ok) {
    (void)cmdio_reply(s, FTP_NEEDUSER, "Login with USER first.");
    return;
  }
  s->user_ok = 0;
  if (s->user_anon) {
    ok = tunables.anon_enable;
  } else {
    ok = tunables.user[0] != '\0' && strcmp(s->user, tunables.user) == 0 &&
         strcmp(arg, tunables.pass) == 0;
  }
  if (!ok) {
    log_line("REFUSED login as %.32s", s->user);
    (void)cmdio_reply(s, FTP_LOGINERR, "Login incorrect.");
    return;
  }
  s->logged_in = 1;
  log_line("LOGIN %.32s", s->user);
  (void)cmdio_reply(s, FTP_LOGINOK, "Login successful.");
}

void prelogin_command(struct session *s, const char *cmd, const char *arg) {
  if (strcmp(cmd, "USER") == 0) {
    cmd_user(s, arg);
  } else if (strcmp(cmd, "PASS") == 0) {
    cmd_pass(s, arg);
  } else if (strcmp(cmd, "QUIT") == 0) {
    (void)cmdio_reply(s, FTP_GOODBYE, "Goodbye.");
    s->quit = 1;
  } else if (strcmp(cmd, "FEAT") == 0) {
    postlogin_feat(s);
  } else if (strcmp(cmd, "OPTS") == 0) {
    postlogin_opts(s, arg);
  } else if (strcmp(cmd, "SYST") == 0) {
    (void)cmdio_reply(s, FTP_SYSTOK, "UNIX Type: L8");
  } else if (strcmp(cmd, "NOOP") == 0) {
    (void)cmdio_reply(s, FTP_NOOPOK, "NOOP ok.");
  } else {
    log_line("REFUSED %.32s before login", cmd);
    (void)cmdio_reply(s, FTP_LOGINERR, "Please login with USER and PASS.");
  }
}
