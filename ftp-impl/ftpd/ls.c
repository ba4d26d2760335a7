/* ls.c - directory listings (see ls.h). */
#define _GNU_SOURCE
#include "ls.h"

#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sysutil.h"

#define LS_MAX_ENTRIES 200000

static void mode_string(mode_t m, char out[11]) {
  const char *rwx = "rwxrwxrwx";
  int i;
  out[0] = S_ISDIR(m)    ? 'd'
           : S_ISLNK(m)  ? 'l'
           : S_ISCHR(m)  ? 'c'
           : S_ISBLK(m)  ? 'b'
           : S_ISFIFO(m) ? 'p'
           : S_ISSOCK(m) ? 's'
                         : '-';
  for (i = 0; i < 9; i++) {
    out[1 + i] = (m & (1u << (8 - i))) ? rwx[i] : '-';
  }
  out[10] = '\0';
}

static int list_line(const char *path, const char *name, const struct stat *st,
                     struct buf *out) {
  char mode[11];
  char date[32];
  struct tm tm;
  time_t now = time(NULL);
  int recent = st->st_mtime > now - 182 * 86400 && st->st_mtime <= now + 3600;
  mode_string(st->st_mode, mode);
  if (gmtime_r(&st->st_mtime, &tm) == NULL ||
      (recent ? strftime(date, sizeof date, "%b %e %H:%M", &tm)
              : strftime(date, sizeof date, "%b %e  %Y", &tm)) == 0) {
    return -1;
  }
  if (buf_fmt(out, "%s %3lu %-8u %-8u %12lld %s %s", mode,
              (unsigned long)st->st_nlink, (unsigned)st->st_uid,
              (unsigned)st->st_gid, (long long)st->st_size, date, name) != 0) {
    return -2;
  }
  if (S_ISLNK(st->st_mode)) {
    char target[PATH_MAX];
    ssize_t n = readlink(path, target, sizeof target - 1);
    if (n >= 0) {
      target[n] = '\0';
      if (buf_append_str(out, " -> ") != 0 ||
          buf_append_str(out, target) != 0) {
        return -2;
      }
    }
  }
  return buf_append_str(out, "\r\n") == 0 ? 0 : -2;
}

static int mlsd_line(const char *name, const struct stat *st, struct buf *out) {
  char date[32];
  struct tm tm;
  const char *type = S_ISDIR(st->st_mode)   ? "dir"
                     : S_ISREG(st->st_mode) ? "file"
                     : S_ISLNK(st->st_mode) ? "OS.unix=symlink"
                                            : "OS.unix=special";
  if (gmtime_r(&st->st_mtime, &tm) == NULL ||
      strftime(date, sizeof date, "%Y%m%d%H%M%S", &tm) == 0) {
    return -1;
  }
  return buf_fmt(out, "type=%s;size=%lld;modify=%s;perm=%s; %s\r\n", type,
                 (long long)st->st_size, date,
                 S_ISDIR(st->st_mode) ? "el" : "r", name) == 0
             ? 0
             : -2;
}

static int one_entry(const char *path, const char *name, enum ls_kind kind,
                     struct buf *out) {
  struct stat st;
  if (kind == LS_NLST) {
    return buf_fmt(out, "%s\r\n", name) == 0 ? 0 : -2;
  }
  if (sys_lstat(path, &st) != 0) {
    return 0; /* vanished meanwhile: skip */
  }
  return kind == LS_LIST ? list_line(path, name, &st, out)
                         : mlsd_line(name, &st, out);
}

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_names(char **names, size_t n) {
  size_t i;
  for (i = 0; i < n; i++) {
    free(names[i]);
  }
  free(names);
}

/* Read the matching names of a directory, sorted. */
static int read_names(const char *dir, const char *pattern, char ***names_out,
                      size_t *count_out) {
  DIR *d = opendir(dir);
  struct dirent *de;
  char **names = NULL;
  size_t n = 0, cap = 0;
  if (d == NULL) {
    return -1;
  }
  while ((de = readdir(d)) != NULL) {
    if (de->d_name[0] == '.' ||
        (pattern != NULL && fnmatch(pattern, de->d_name, 0) != 0)) {
      continue;
    }
    if (n == cap) {
      char **nn;
      if (cap >= LS_MAX_ENTRIES) {
        break;
      }
      cap = cap ? cap * 2 : 64;
      nn = realloc(names, cap * sizeof *names);
      if (nn == NULL) {
        die("out of memory");
      }
      names = nn;
    }
    names[n] = strdup(de->d_name);
    if (names[n] == NULL) {
      die("out of memory");
    }
    n++;
  }
  if (closedir(d) != 0) {
    free_names(names, n);
    return -1;
  }
  if (n > 1) {
    qsort(names, n, sizeof *names, cmp_names);
  }
  *names_out = names;
  *count_out = n;
  return 0;
}

int ls_build(const char *real, enum ls_kind kind, const char *pattern,
             struct buf *out) {
  struct stat st;
  char **names;
  size_t n, i;
  int rc = 0;
  if (sys_stat(real, &st) != 0) {
    return -1;
  }
  if (!S_ISDIR(st.st_mode)) {
    const char *base = strrchr(real, '/');
    return one_entry(real, base ? base + 1 : real, kind, out);
  }
  if (read_names(real, pattern, &names, &n) != 0) {
    return -1;
  }
  for (i = 0; i < n && rc == 0; i++) {
    char path[PATH_MAX];
    if (str_fmt(path, sizeof path, "%s/%s", real, names[i]) != 0) {
      continue;
    }
    rc = one_entry(path, names[i], kind, out);
  }
  free_names(names, n);
  return rc;
}
