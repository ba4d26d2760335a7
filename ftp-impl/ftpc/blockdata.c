/* blockdata.c - the tcp-pipelined data connection, client side (see
 * blockdata.h). */
#include "blockdata.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sysutil.h"

#define BD_READ (1u << 20)

int bd_open(struct client *cl) {
  struct reply r;
  if (ctrl_send(&cl->cc, "MODE", "B") != 0 || ctrl_reply(&cl->cc, &r) != 0) {
    return client_fail(cl, "%s", cl->cc.error);
  }
  if (r.code != 200) {
    return client_fail(cl, "server refused block mode: %d %s", r.code, r.text);
  }
  return xfer_passive(cl, &cl->data);
}

void bd_in_init(struct bd_in *in) {
  memset(in, 0, sizeof *in);
  in->buf = sys_malloc(BD_READ);
  blk_reset(&in->dec);
}

void bd_in_free(struct bd_in *in) {
  free(in->buf);
  in->buf = NULL;
}

int bd_in_check_end(struct client *cl, const struct bd_in *in) {
  if (in->off < in->len || blk_partial(&in->dec)) {
    return client_fail(cl,
                       "data connection: %zu bytes after the last "
                       "transfer's EOF block",
                       in->len - in->off);
  }
  return 0;
}

int bd_in_read(struct client *cl, struct bd_in *in) {
  unsigned sid;
  int eor;
  ssize_t n;
  if (in->off < in->len) {
    return 1;
  }
  n = xp_recv_nowait(&cl->data, in->buf, BD_READ, &sid, &eor);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
    return 0;
  }
  if (n <= 0) {
    return client_fail(cl,
                       "data connection %s after %llu bytes of a transfer "
                       "(no EOF block)",
                       n == 0 ? "closed by server" : strerror(errno),
                       (unsigned long long)in->dec.payload);
  }
  in->t = sys_mono_now();
  in->off = 0;
  in->len = (size_t)n;
  return 1;
}

int bd_in_next(struct client *cl, struct bd_in *in, const char **p, size_t *n,
               int *last) {
  size_t used;
  *last = 0;
  *n = 0;
  if (in->off == in->len) {
    return 0;
  }
  used = blk_decode(&in->dec, in->buf + in->off, in->len - in->off, p, n);
  in->off += used;
  if (in->dec.state == BLK_BAD) {
    return client_fail(cl,
                       "data connection: block %llu has descriptor %u "
                       "(only 0 and EOF 64 are file data)",
                       (unsigned long long)in->dec.blocks, in->dec.desc);
  }
  if (in->dec.state == BLK_DONE) {
    *last = 1;
    blk_reset(&in->dec);
  }
  return 1;
}

/* Frame and send count bytes of fd, one block per write. */
static int send_blocks(struct client *cl, int fd, uint64_t count) {
  char *frame = sys_malloc(BLK_HEADER + BLK_MAX);
  uint64_t done = 0;
  int rc = 0;
  do {
    size_t n = blk_payload(count - done, cl->o->chunk), got = 0;
    while (got < n && rc == 0) {
      ssize_t r = sys_read(fd, frame + BLK_HEADER + got, n - got);
      if (r <= 0) {
        rc = client_fail(cl, "local file shorter than its size");
      }
      got += r > 0 ? (size_t)r : 0;
    }
    done += n;
    blk_header((unsigned char *)frame, n, done == count);
    if (rc == 0 && xp_send(&cl->data, frame, BLK_HEADER + n, 0) != 0) {
      rc = client_fail(cl, "upload failed after %llu bytes: %s",
                       (unsigned long long)(done - n), strerror(errno));
    }
  } while (rc == 0 && done < count);
  free(frame);
  return rc;
}

int bd_put(struct client *cl, const char *local) {
  struct stat st;
  struct reply r;
  const char *base = strrchr(local, '/');
  int fd = sys_open(local, O_RDONLY, 0), rc;
  if (fd < 0 || sys_fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    sys_close(fd);
    return client_fail(cl, "cannot read local file %s", local);
  }
  base = base ? base + 1 : local;
  if (ctrl_send(&cl->cc, "STOR", base) != 0 || ctrl_reply(&cl->cc, &r) != 0) {
    sys_close(fd);
    return client_fail(cl, "%s", cl->cc.error);
  }
  if (r.code != 150) {
    sys_close(fd);
    return client_fail(cl, "STOR %s refused: %d %s", base, r.code, r.text);
  }
  rc = send_blocks(cl, fd, (uint64_t)st.st_size);
  sys_close(fd);
  if (rc != 0) {
    return -1;
  }
  if (ctrl_reply(&cl->cc, &r) != 0 || r.code != 226) {
    return client_fail(cl, "STOR %s not confirmed: %d %s", base, r.code,
                       r.text);
  }
  return 0;
}
