/* tree.c - the served tree of the fuzz targets (see tree.h). */
#include "tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[PATH_MAX];
static char outdir[PATH_MAX];
static int dirty = 1;

void tree_mark_dirty(void) { dirty = 1; }

struct entry {
  const char *path;
  const char *content; /* NULL: a directory; "->X": a symlink to X */
};

static const struct entry entries[] = {
    {"sub", NULL},   {"a.dat", "0123456789"}, {"b.dat", "hello\r\nworld\r\n"},
    {"empty", ""},   {".hidden", "secret"},   {"sub/c.txt", "c"},
    {"in", "->sub"}, {"out", "->/etc"},       {"sub/up", "->../.."},
};

#define NENTRIES (sizeof entries / sizeof entries[0])

static void path_of(char *dst, size_t cap, const char *rel) {
  if (snprintf(dst, cap, "%s/%s", root, rel) >= (int)cap) {
    abort();
  }
}

static void write_file(const char *rel, const char *content) {
  char p[PATH_MAX];
  size_t n = strlen(content);
  int fd;
  path_of(p, sizeof p, rel);
  fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0644);
  if (fd < 0 || write(fd, content, n) != (ssize_t)n || close(fd) != 0) {
    abort();
  }
}

static void make_entry(const struct entry *e) {
  char p[PATH_MAX];
  path_of(p, sizeof p, e->path);
  if (e->content == NULL) {
    if (mkdir(p, 0755) != 0) {
      abort();
    }
  } else if (strncmp(e->content, "->", 2) == 0) {
    if (symlink(e->content + 2, p) != 0) {
      abort();
    }
  } else {
    write_file(e->path, e->content);
  }
}

static void make_temp_dir(char *dst) {
  const char *tmp = getenv("TMPDIR");
  char tmpl[PATH_MAX];
  if (snprintf(tmpl, sizeof tmpl, "%s/ftpfuzz.XXXXXX",
               tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp") >=
          (int)sizeof tmpl ||
      mkdtemp(tmpl) == NULL || realpath(tmpl, dst) == NULL) {
    abort();
  }
}

const char *tree_make(void) {
  size_t i;
  if (root[0] != '\0') {
    return root;
  }
  make_temp_dir(root);
  for (i = 0; i < NENTRIES; i++) {
    make_entry(&entries[i]);
  }
  return root;
}

static int known(const char *dir, const char *name) {
  char rel[PATH_MAX];
  size_t i;
  if (snprintf(rel, sizeof rel, "%s%s%s", dir, dir[0] ? "/" : "", name) >=
      (int)sizeof rel) {
    return 0;
  }
  for (i = 0; i < NENTRIES; i++) {
    if (strcmp(entries[i].path, rel) == 0) {
      return 1;
    }
  }
  return 0;
}

/* Remove every entry of folder p that keep() does not name. */
static void prune_path(const char *p, const char *dir,
                       int (*keep)(const char *dir, const char *name)) {
  DIR *d;
  struct dirent *de;
  d = opendir(p);
  if (d == NULL) {
    abort();
  }
  while ((de = readdir(d)) != NULL) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
        keep(dir, de->d_name)) {
      continue;
    }
    if (unlinkat(dirfd(d), de->d_name, 0) != 0) {
      abort();
    }
  }
  if (closedir(d) != 0) {
    abort();
  }
}

/* Remove every entry of dir (relative to the root) the tree does not list. */
static void prune(const char *dir) {
  char p[PATH_MAX];
  path_of(p, sizeof p, dir);
  prune_path(p, dir, known);
}

static int keep_nothing(const char *dir, const char *name) {
  (void)dir;
  (void)name;
  return 0;
}

const char *tree_outdir(void) {
  if (outdir[0] == '\0') {
    make_temp_dir(outdir);
  }
  return outdir;
}

void tree_outdir_clear(void) { prune_path(tree_outdir(), "", keep_nothing); }

void tree_restore(void) {
  size_t i;
  if (!dirty) {
    return;
  }
  dirty = 0;
  prune("");
  prune("sub");
  for (i = 0; i < NENTRIES; i++) {
    const char *c = entries[i].content;
    if (c != NULL && strncmp(c, "->", 2) != 0) {
      write_file(entries[i].path, c);
    }
  }
}
