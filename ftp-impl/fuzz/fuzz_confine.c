/* fuzz_confine.c - path confinement (confine_resolve): a working directory
 * and an argument, both from the client, resolved against the served tree
 * of tree.h (which holds a symlink out of the root and one back up to it).
 *
 * In: byte 0 bit 0 = must_exist (RETR, CWD...) or not (STOR); the rest is
 * "CWD\nARG" (without a '\n': the argument alone, from "/").
 * Out: nothing; aborts when a resolved path leaves the root or the virtual
 * path is not normalised (absolute, no "." or ".." parts, no "//"). */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "confine.h"
#include "tree.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_virt(const char *v) {
  if (v[0] != '/' || strstr(v, "//") != NULL || strstr(v, "/./") != NULL ||
      strstr(v, "/../") != NULL) {
    abort();
  }
  {
    size_t n = strlen(v);
    if ((n >= 2 && strcmp(v + n - 2, "/.") == 0) ||
        (n >= 3 && strcmp(v + n - 3, "/..") == 0) ||
        (n > 1 && v[n - 1] == '/')) {
      abort();
    }
  }
}

static void check_real(const char *root, const char *real) {
  size_t rl = strlen(root);
  if (strncmp(real, root, rl) != 0 || (real[rl] != '\0' && real[rl] != '/')) {
    abort(); /* outside the served root */
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *root = tree_make();
  char in[2 * PATH_MAX];
  char cwd[PATH_MAX] = "/";
  char virt[PATH_MAX], real[PATH_MAX];
  const char *arg = in;
  char *nl;
  int must_exist;
  if (size == 0 || size >= sizeof in) {
    return 0;
  }
  must_exist = data[0] & 1;
  memcpy(in, data + 1, size - 1);
  in[size - 1] = '\0';
  nl = strchr(in, '\n');
  if (nl != NULL) {
    size_t n = (size_t)(nl - in);
    if (n == 0 || in[0] != '/' || n >= sizeof cwd) {
      return 0; /* the server's cwd is always absolute */
    }
    memcpy(cwd, in, n);
    cwd[n] = '\0';
    arg = nl + 1;
  }
  if (confine_resolve(root, cwd, arg, must_exist, virt, sizeof virt, real,
                      sizeof real) == CONFINE_OK) {
    check_virt(virt);
    check_real(root, real);
  }
  return 0;
}
