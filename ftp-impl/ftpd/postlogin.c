/* postlogin.c - FTP commands after login (see postlogin.h). */
#define _GNU_SOURCE
#include "postlogin.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cmdio.h"
#include "confine.h"
#include "dataio.h"
#include "extsend.h"
#include "ftpcodes.h"
#include "logging.h"
#include "ls.h"
#include "str.h"
#include "sysutil.h"
#include "tunables.h"

/* Resolve a path argument; on failure reply 550 (and log refusals). */
static int resolve(struct session *s, const char *cmd, const char *arg,
                   int must_exist, char *virt, size_t vcap, char *real,
                   size_t rcap) {
  enum confine_result r = confine_resolve(tunables.root, s->cwd, arg,
                                          must_exist, virt, vcap, real, rcap);
  if (r == CONFINE_OK) {
    return 0;
  }
  if (r == CONFINE_OUTSIDE) {
    log_line("REFUSED %s %s: outside root", cmd, arg);
    (void)cmdio_reply(s, FTP_NOPERM, "Permission denied.");
  } else if (r == CONFINE_NOENT) {
    (void)cmdio_reply(s, FTP_FILEFAIL, "No such file or directory.");
  } else {
    log_line("REFUSED %s: bad path", cmd);
    (void)cmdio_reply(s, FTP_FILEFAIL, "Bad path.");
  }
  return -1;
}

static void cmd_pwd(struct session *s) {
  char quoted[PATH_MAX * 2];
  size_t i, o = 0;
  for (i = 0; s->cwd[i] != '\0' && o + 3 < sizeof quoted; i++) {
    quoted[o++] = s->cwd[i];
    if (s->cwd[i] == '"') {
      quoted[o++] = '"';
    }
  }
  quoted[o] = '\0';
  (void)cmdio_reply(s, FTP_PWDOK, "\"%s\" is the current directory", quoted);
}

static void cmd_cwd(struct session *s, const char *arg) {
  char virt[PATH_MAX], real[PATH_MAX];
  struct stat st;
  if (resolve(s, "CWD", arg, 1, virt, sizeof virt, real, sizeof real) != 0) {
    return;
  }
  if (sys_stat(real, &st) != 0 || !S_ISDIR(st.st_mode) ||
      access(real, X_OK) != 0) {
    (void)cmdio_reply(s, FTP_FILEFAIL, "Failed to change directory.");
    return;
  }
  (void)str_copy(s->cwd, sizeof s->cwd, virt);
  (void)cmdio_reply(s, FTP_CWDOK, "Directory successfully changed.");
}

static void cmd_cdup(struct session *s) {
  if (strcmp(s->cwd, "/") == 0) {
    (void)cmdio_reply(s, FTP_CWDOK, "Directory successfully changed.");
    return;
  }
  cmd_cwd(s, "..");
}

static void cmd_type(struct session *s, const char *arg) {
  char a[16];
  (void)str_copy(a, sizeof a, arg);
  str_upper(a);
  if (strcmp(a, "I") == 0 || strcmp(a, "L 8") == 0) {
    s->type_ascii = 0;
    (void)cmdio_reply(s, FTP_TYPEOK, "Switching to Binary mode.");
  } else if (strcmp(a, "A") == 0 || strcmp(a, "A N") == 0) {
    s->type_ascii = 1;
    (void)cmdio_reply(s, FTP_TYPEOK, "Switching to ASCII mode.");
  } else {
    (void)cmdio_reply(s, FTP_BADMODE, "Bad TYPE command.");
  }
}

/* MODE S (stream), MODE B (block, RFC 959 3.4.2: the tcp-pipelined
 * variant) and MODE E (GridFTP's extended block mode: the xftp variant).
 * Block mode keeps one TCP data connection for the session, extended block
 * mode opens several per transfer; both need TCP, and multistream has no
 * data connections at all.  Leaving block mode closes the connection it
 * kept: in stream mode the end of a connection is the end of the data. */
static void cmd_mode(struct session *s, const char *arg) {
  int block = str_eq_nocase(arg, "B"), ext = str_eq_nocase(arg, "E");
  if (!block && !ext && !str_eq_nocase(arg, "S")) {
    log_line("REFUSED MODE %.32s", arg);
    (void)cmdio_reply(s, FTP_BADMODE, "Bad MODE command.");
  } else if ((block || ext) && (s->ctrl.proto != XP_TCP || s->multistream)) {
    log_line("REFUSED MODE %s: %s control connection%s", block ? "B" : "E",
             xp_proto_name(s->ctrl.proto), s->multistream ? ", MSTREAM" : "");
    (void)cmdio_reply(s, FTP_BADMODE, "MODE %s needs a TCP control connection.",
                      block ? "B" : "E");
  } else {
    if (s->block_mode && !block) {
      dataio_drop_persistent(s);
    }
    s->block_mode = block;
    s->ext_mode = ext;
    (void)cmdio_reply(s, FTP_MODEOK, "Mode set to %s.",
                      block ? "B"
                      : ext ? "E"
                            : "S");
  }
}

static int no_data_conn_in_ms(struct session *s) {
  if (s->multistream) {
    (void)cmdio_reply(
        s, FTP_BADSEQ,
        "No data connections in multistream mode (data is on stream 1).");
    return 1;
  }
  return 0;
}

static void cmd_port(struct session *s, const char *cmd, const char *arg) {
  struct addr a;
  int rc;
  if (no_data_conn_in_ms(s)) {
    return;
  }
  rc = strcmp(cmd, "PORT") == 0 ? addr_parse_port_arg(arg, &a)
                                : addr_parse_eprt_arg(arg, &a);
  if (rc != 0) {
    log_line("REFUSED %s: unparsable argument", cmd);
    (void)cmdio_reply(s, FTP_BADCMD, "Illegal %s command.", cmd);
    return;
  }
  dataio_port(s, &a, cmd);
}

static void cmd_epsv(struct session *s, const char *arg) {
  if (no_data_conn_in_ms(s)) {
    return;
  }
  if (str_eq_nocase(arg, "ALL")) {
    (void)cmdio_reply(s, FTP_PORTOK, "EPSV ALL ok.");
    return;
  }
  if (arg[0] != '\0' && strcmp(arg, "1") != 0 && strcmp(arg, "2") != 0) {
    (void)cmdio_reply(s, FTP_BADPROT,
                      "Network protocol not supported, use (1,2)");
    return;
  }
  dataio_pasv(s, 1);
}

/* Split a LIST/NLST argument into (options skipped) a path and a glob. */
static void list_arg(const char *arg, char *path, size_t pcap, char *glob,
                     size_t gcap) {
  const char *p = arg;
  const char *slash;
  while (*p == '-') {
    while (*p != '\0' && *p != ' ') {
      p++;
    }
    while (*p == ' ') {
      p++;
    }
  }
  glob[0] = '\0';
  (void)str_copy(path, pcap, p);
  if (!str_has_glob(path)) {
    return;
  }
  slash = strrchr(path, '/');
  if (slash == NULL) {
    (void)str_copy(glob, gcap, path);
    (void)str_copy(path, pcap, "");
  } else {
    (void)str_copy(glob, gcap, slash + 1);
    path[slash - path + (slash == path)] = '\0';
  }
}

static void cmd_list(struct session *s, const char *cmd, const char *arg,
                     enum ls_kind kind) {
  char path[PATH_MAX], glob[NAME_MAX + 1], virt[PATH_MAX], real[PATH_MAX];
  struct buf listing;
  struct xp_conn data;
  int rc, ok;
  list_arg(arg, path, sizeof path, glob, sizeof glob);
  if (str_has_glob(path)) {
    (void)cmdio_reply(s, FTP_FILEFAIL, "Wildcards only in the last component.");
    return;
  }
  if (resolve(s, cmd, path[0] ? path : ".", 1, virt, sizeof virt, real,
              sizeof real) != 0) {
    return;
  }
  buf_init(&listing, tunables.max_listing);
  rc = ls_build(real, kind, glob[0] ? glob : NULL, &listing);
  if (rc == 0 && s->ext_mode) {
    (void)ext_transfer(s, "directory listing", -1, listing.data, 0,
                       listing.len);
    buf_free(&listing);
    s->rest = 0;
    return;
  }
  if (rc != 0) {
    buf_free(&listing);
    if (rc == -2) {
      log_line("REFUSED %s %s: listing too large", cmd, virt);
    }
    (void)cmdio_reply(s, FTP_FILEFAIL,
                      rc == -2 ? "Listing too large." : "Cannot list.");
    return;
  }
  if (dataio_begin(s, &data, "directory listing", listing.len) != 0) {
    buf_free(&listing);
    return;
  }
  ok = dataio_send_buf(s, &data, listing.data, listing.len) == 0;
  buf_free(&listing);
  s->rest = 0;
  dataio_end(s, &data, ok, "Failure writing network stream.");
}

static int open_regular(struct session *s, const char *cmd, const char *arg,
                        struct stat *st) {
  char virt[PATH_MAX], real[PATH_MAX];
  int fd;
  if (resolve(s, cmd, arg, 1, virt, sizeof virt, real, sizeof real) != 0) {
    return -1;
  }
  fd = sys_open(real, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0);
  if (fd < 0 || sys_fstat(fd, st) != 0 || !S_ISREG(st->st_mode) ||
      sys_set_nonblock(fd, 0) != 0) {
    sys_close(fd);
    (void)cmdio_reply(s, FTP_FILEFAIL, "Failed to open file.");
    return -1;
  }
  return fd;
}

static void cmd_size(struct session *s, const char *arg) {
  struct stat st;
  int fd = open_regular(s, "SIZE", arg, &st);
  if (fd < 0) {
    return;
  }
  sys_close(fd);
  (void)cmdio_reply(s, FTP_SIZEOK, "%lld", (long long)st.st_size);
}

static void cmd_mdtm(struct session *s, const char *arg) {
  struct stat st;
  struct tm tm;
  char date[32];
  int fd = open_regular(s, "MDTM", arg, &st);
  if (fd < 0) {
    return;
  }
  sys_close(fd);
  if (gmtime_r(&st.st_mtime, &tm) == NULL ||
      strftime(date, sizeof date, "%Y%m%d%H%M%S", &tm) == 0) {
    (void)cmdio_reply(s, FTP_FILEFAIL, "Could not get modification time.");
    return;
  }
  (void)cmdio_reply(s, FTP_MDTMOK, "%s", date);
}

static void cmd_rest(struct session *s, const char *arg) {
  uint64_t v;
  if (str_to_u64(arg, (uint64_t)INT64_MAX, &v) != 0) {
    (void)cmdio_reply(s, FTP_BADARG, "Bad REST argument.");
    return;
  }
  s->rest = v;
  (void)cmdio_reply(s, FTP_RESTOK, "Restart position accepted (%llu).",
                    (unsigned long long)v);
}

static void cmd_allo(struct session *s, const char *arg) {
  uint64_t v;
  if (!s->multistream) {
    (void)cmdio_reply(s, FTP_ALLOIGNORED, "ALLO command ignored.");
    return;
  }
  if (str_to_u64(arg, (uint64_t)INT64_MAX, &v) != 0) {
    (void)cmdio_reply(s, FTP_BADARG, "ALLO wants a byte count.");
    return;
  }
  s->allo = v;
  s->allo_set = 1;
  (void)cmdio_reply(s, FTP_ALLOOK, "ALLO accepted (%llu bytes).",
                    (unsigned long long)v);
}

static void cmd_retr(struct session *s, const char *arg) {
  struct stat st;
  struct xp_conn data;
  uint64_t size, offset = s->rest;
  int fd, ok;
  s->rest = 0;
  fd = open_regular(s, "RETR", arg, &st);
  if (fd < 0) {
    return;
  }
  size = (uint64_t)st.st_size;
  if (offset > size || sys_lseek(fd, (off_t)offset) < 0) {
    sys_close(fd);
    (void)cmdio_reply(s, FTP_BADREST, "Restart position beyond end of file.");
    return;
  }
  if (s->ext_mode) {
    ok = ext_transfer(s, arg, fd, NULL, offset, size - offset) == 0;
    sys_close(fd);
    log_line("%s RETR %s %llu bytes in MODE E over %u connections",
             ok ? "OK" : "FAIL", arg, (unsigned long long)(size - offset),
             s->parallel);
    return;
  }
  if (dataio_begin(s, &data, arg, size - offset) != 0) {
    sys_close(fd);
    return;
  }
  ok = dataio_send_fd(s, &data, fd, size - offset) == 0;
  sys_close(fd);
  log_line("%s RETR %s %llu bytes", ok ? "OK" : "FAIL", arg,
           (unsigned long long)(size - offset));
  dataio_end(s, &data, ok, "Failure writing network stream.");
}

/* Open the upload target without truncating it: an existing file is cut
 * only once the transfer starts, a new one is created with O_EXCL and
 * *created set (so a refused upload can remove it).  A REST offset beyond
 * the file's size is refused (554): no sparse file, no hole.  -1 replied. */
static int open_upload(struct session *s, const char *real, uint64_t offset,
                       int *created) {
  struct stat st;
  int fd = sys_open(real, O_WRONLY | O_NOFOLLOW | O_NONBLOCK, 0);
  *created = 0;
  if (fd < 0 && errno == ENOENT && offset == 0) {
    fd = sys_open(real, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK,
                  0644);
    *created = fd >= 0;
  }
  if (fd < 0 && errno == ENOENT) {
    log_line("REFUSED STOR: REST %llu beyond a missing file",
             (unsigned long long)offset);
    (void)cmdio_reply(s, FTP_BADREST, "Restart position beyond end of file.");
    return -1;
  }
  if (fd < 0 || sys_fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      sys_set_nonblock(fd, 0) != 0) {
    sys_close(fd);
    (void)cmdio_reply(s, FTP_UPLOADFAIL, "Could not create file.");
    return -1;
  }
  if (offset > (uint64_t)st.st_size) {
    sys_close(fd);
    log_line("REFUSED STOR: REST %llu beyond the file's %lld bytes",
             (unsigned long long)offset, (long long)st.st_size);
    (void)cmdio_reply(s, FTP_BADREST, "Restart position beyond end of file.");
    return -1;
  }
  return fd;
}

/* Cut the file at the restart offset and seek there, once the 150 is out. */
static int start_upload(int fd, uint64_t offset) {
  return sys_ftruncate(fd, (off_t)offset) == 0 &&
                 sys_lseek(fd, (off_t)offset) >= 0
             ? 0
             : -1;
}

static void cmd_stor(struct session *s, const char *arg) {
  char virt[PATH_MAX], real[PATH_MAX];
  struct xp_conn data;
  uint64_t offset = s->rest, count = s->allo, got = 0;
  int fd, rc, created;
  s->rest = 0;
  if (!tunables.allow_upload) {
    log_line("REFUSED STOR %s: uploads disabled", arg);
    (void)cmdio_reply(s, FTP_NOPERM, "Permission denied.");
    return;
  }
  if (s->ext_mode) {
    (void)cmdio_reply(s, FTP_BADMODE, "No uploads in MODE E; use MODE S.");
    return;
  }
  if (s->multistream && !s->allo_set) {
    (void)cmdio_reply(s, FTP_BADSEQ,
                      "Send ALLO <bytes> before STOR in multistream mode.");
    return;
  }
  s->allo_set = 0;
  if (resolve(s, "STOR", arg, 0, virt, sizeof virt, real, sizeof real) != 0) {
    return;
  }
  fd = open_upload(s, real, offset, &created);
  if (fd < 0) {
    return;
  }
  if (dataio_begin(s, &data, arg, s->multistream ? count : 0) != 0) {
    sys_close(fd);
    if (created) {
      (void)sys_unlink(real); /* refused: leave nothing behind */
    }
    return;
  }
  rc = start_upload(fd, offset) == 0 ? dataio_recv_fd(s, &data, fd, count, &got)
                                     : -2;
  sys_close(fd);
  log_line("%s STOR %s %llu bytes", rc == 0 ? "OK" : "FAIL", arg,
           (unsigned long long)got);
  dataio_end(s, &data, rc == 0,
             rc == -2 ? "Failure writing to local file."
                      : "Failure reading network stream.");
}

void postlogin_feat(struct session *s) {
  (void)cmdio_reply_multi(s, FTP_FEAT, "Features:",
                          " EPRT\r\n EPSV\r\n MDTM\r\n MLSD\r\n"
                          " MSTREAM\r\n PASV\r\n REST STREAM\r\n SIZE\r\n"
                          " TVFS\r\n UTF8\r\n",
                          "End");
}

static void opts_mstream(struct session *s, const char *val) {
  unsigned in = 0, out = 0;
  if (str_eq_nocase(val, "OFF")) {
    s->multistream = 0;
    (void)cmdio_reply(s, FTP_OPTSOK, "MSTREAM OFF.");
    return;
  }
  if (!str_eq_nocase(val, "ON")) {
    (void)cmdio_reply(s, FTP_BADOPTS, "MSTREAM wants ON or OFF.");
    return;
  }
  if (s->ctrl.proto != XP_SCTP || xp_streams(&s->ctrl, &in, &out) != 0 ||
      in < 2 || out < 2) {
    log_line("REFUSED MSTREAM ON: %s, %u in / %u out streams",
             xp_proto_name(s->ctrl.proto), in, out);
    (void)cmdio_reply(s, FTP_BADMODE,
                      "MSTREAM needs SCTP with 2 streams each way.");
    return;
  }
  dataio_reset(s);
  s->multistream = 1;
  (void)cmdio_reply(s, FTP_OPTSOK,
                    "MSTREAM ON: replies on stream 0, data on stream 1.");
}

/* "RETR Parallelism=<start>,<min>,<max>;" (GFD.20 3.5): the connections of
 * the next MODE E transfers.  ftpd opens <start> of them; min and max, if
 * given, must hold it. */
static int parse_parallelism(const char *val, uint64_t n[3]) {
  static const char key[] = "Parallelism=";
  char num[24];
  const char *p = val;
  unsigned k = 0;
  if (strncasecmp(p, key, sizeof key - 1) != 0) {
    return -1;
  }
  p += sizeof key - 1;
  n[1] = 0;
  n[2] = UINT64_MAX;
  for (;; k++) {
    size_t len = strspn(p, "0123456789");
    if (k == 3 || len == 0 || len >= sizeof num) {
      return -1;
    }
    memcpy(num, p, len);
    num[len] = '\0';
    if (str_to_u64(num, 1u << 20, &n[k]) != 0) {
      return -1;
    }
    p += len;
    if (*p != ',') {
      break;
    }
    p++;
  }
  if (*p == ';') {
    p++;
  }
  return *p == '\0' && n[1] <= n[0] && n[0] <= n[2] ? 0 : -1;
}

static void opts_retr(struct session *s, const char *val) {
  uint64_t n[3];
  if (parse_parallelism(val, n) != 0) {
    (void)cmdio_reply(s, FTP_BADOPTS, "RETR options: Parallelism=N,MIN,MAX;");
  } else if (n[0] < 1 || n[0] > tunables.max_parallel) {
    log_line("REFUSED OPTS RETR Parallelism=%llu (limit %u)",
             (unsigned long long)n[0], tunables.max_parallel);
    (void)cmdio_reply(s, FTP_BADOPTS, "Parallelism must be 1 to %u.",
                      tunables.max_parallel);
  } else {
    s->parallel = (unsigned)n[0];
    (void)cmdio_reply(s, FTP_OPTSOK, "Parallelism set to %u.", s->parallel);
  }
}

void postlogin_opts(struct session *s, const char *arg) {
  char name[32], val[64];
  (void)str_split_cmd(arg, name, sizeof name, val, sizeof val);
  if (strcmp(name, "UTF8") == 0) {
    (void)cmdio_reply(s, FTP_OPTSOK, "Always in UTF8 mode.");
  } else if (strcmp(name, "MSTREAM") == 0) {
    if (!s->logged_in) {
      (void)cmdio_reply(s, FTP_LOGINERR, "Please login with USER and PASS.");
      return;
    }
    opts_mstream(s, val);
  } else if (strcmp(name, "RETR") == 0 && s->logged_in) {
    opts_retr(s, val);
  } else {
    (void)cmdio_reply(s, FTP_BADOPTS, "Option not understood.");
  }
}

static int simple_command(struct session *s, const char *cmd, const char *arg) {
  if (strcmp(cmd, "NOOP") == 0) {
    (void)cmdio_reply(s, FTP_NOOPOK, "NOOP ok.");
  } else if (strcmp(cmd, "SYST") == 0) {
    (void)cmdio_reply(s, FTP_SYSTOK, "UNIX Type: L8");
  } else if (strcmp(cmd, "FEAT") == 0) {
    postlogin_feat(s);
  } else if (strcmp(cmd, "OPTS") == 0) {
    postlogin_opts(s, arg);
  } else if (strcmp(cmd, "PWD") == 0 || strcmp(cmd, "XPWD") == 0) {
    cmd_pwd(s);
  } else if (strcmp(cmd, "TYPE") == 0) {
    cmd_type(s, arg);
  } else if (strcmp(cmd, "MODE") == 0) {
    cmd_mode(s, arg);
  } else if (strcmp(cmd, "STRU") == 0) {
    if (str_eq_nocase(arg, "F")) {
      (void)cmdio_reply(s, FTP_STRUOK, "Structure set to F.");
    } else {
      (void)cmdio_reply(s, FTP_BADMODE, "Bad STRU command.");
    }
  } else if (strcmp(cmd, "ABOR") == 0) {
    (void)cmdio_reply(s, FTP_ABOR_NOCONN, "No transfer to ABOR.");
  } else if (strcmp(cmd, "HELP") == 0) {
    (void)cmdio_reply(s, FTP_HELP, "See RFC 959 and ftp-impl/PROTOCOL.md.");
  } else if (strcmp(cmd, "USER") == 0) {
    (void)cmdio_reply(s, FTP_LOGINERR, "Can't change to another user.");
  } else if (strcmp(cmd, "PASS") == 0) {
    (void)cmdio_reply(s, FTP_LOGINOK, "Already logged in.");
  } else if (strcmp(cmd, "QUIT") == 0) {
    (void)cmdio_reply(s, FTP_GOODBYE, "Goodbye.");
    s->quit = 1;
  } else {
    return 0;
  }
  return 1;
}

static int needs_arg(struct session *s, const char *arg) {
  if (arg[0] == '\0') {
    (void)cmdio_reply(s, FTP_BADARG, "Command needs an argument.");
    return 1;
  }
  return 0;
}

void postlogin_command(struct session *s, const char *cmd, const char *arg) {
  if (simple_command(s, cmd, arg)) {
    return;
  }
  if (strcmp(cmd, "CWD") == 0 || strcmp(cmd, "XCWD") == 0) {
    if (!needs_arg(s, arg)) cmd_cwd(s, arg);
  } else if (strcmp(cmd, "CDUP") == 0 || strcmp(cmd, "XCUP") == 0) {
    cmd_cdup(s);
  } else if (strcmp(cmd, "PASV") == 0) {
    if (!no_data_conn_in_ms(s)) dataio_pasv(s, 0);
  } else if (strcmp(cmd, "EPSV") == 0) {
    cmd_epsv(s, arg);
  } else if (strcmp(cmd, "PORT") == 0 || strcmp(cmd, "EPRT") == 0) {
    cmd_port(s, cmd, arg);
  } else if (strcmp(cmd, "LIST") == 0) {
    cmd_list(s, cmd, arg, LS_LIST);
  } else if (strcmp(cmd, "NLST") == 0) {
    cmd_list(s, cmd, arg, LS_NLST);
  } else if (strcmp(cmd, "MLSD") == 0) {
    cmd_list(s, cmd, arg, LS_MLSD);
  } else if (strcmp(cmd, "SIZE") == 0) {
    if (!needs_arg(s, arg)) cmd_size(s, arg);
  } else if (strcmp(cmd, "MDTM") == 0) {
    if (!needs_arg(s, arg)) cmd_mdtm(s, arg);
  } else if (strcmp(cmd, "REST") == 0) {
    cmd_rest(s, arg);
  } else if (strcmp(cmd, "ALLO") == 0) {
    cmd_allo(s, arg);
  } else if (strcmp(cmd, "RETR") == 0) {
    if (!needs_arg(s, arg)) cmd_retr(s, arg);
  } else if (strcmp(cmd, "STOR") == 0) {
    if (!needs_arg(s, arg)) cmd_stor(s, arg);
  } else {
    log_line("REFUSED unknown command %.32s", cmd);
    (void)cmdio_reply(s, FTP_BADCMD, "Unknown command.");
  }
}
