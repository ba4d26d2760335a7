/* blockdata.h - the client's side of the tcp-pipelined variant's one data
 * connection: MODE B and a single PASV/EPSV at login, then every transfer
 * of the session in RFC 959 blocks on that connection, in command order
 * (PROTOCOL.md, tcp-pipelined).  The pipelined engine (msxfer.c) decides
 * which transfer the bytes belong to; this file reads, unframes and frames
 * them. */
#ifndef FTP_BLOCKDATA_H
#define FTP_BLOCKDATA_H

#include <stddef.h>

#include "blockmode.h"
#include "client.h"

/* Bytes read off the data connection, not yet handed on, and the decoder
 * of the transfer they belong to. */
struct bd_in {
  char *buf;
  size_t off, len;
  double t; /* arrival of what is in buf */
  struct blk_dec dec;
};

/* After login: MODE B, then PASV (IPv4) or EPSV, and connect cl->data. */
int bd_open(struct client *cl);
void bd_in_init(struct bd_in *in);
void bd_in_free(struct bd_in *in);
/* At the end of a run of transfers: -1 (cl->error set) if bytes beyond the
 * last EOF block were read - data nobody asked for. */
int bd_in_check_end(struct client *cl, const struct bd_in *in);
/* Read what the data connection holds without waiting, when buf is empty.
 * 1 bytes read, 0 nothing yet, -1 the connection ended or failed (a data
 * connection that ends while a transfer is owed bytes is a failure). */
int bd_in_read(struct client *cl, struct bd_in *in);
/* The next payload piece of the current transfer from buf: 1 with *p, *n
 * (possibly 0) and *last (its EOF block is complete; the decoder is then
 * reset for the next transfer), 0 when buf is used up, -1 on a bad block
 * descriptor (cl->error set). */
int bd_in_next(struct client *cl, struct bd_in *in, const char **p, size_t *n,
               int *last);
/* STOR of a local file in blocks of at most --chunk bytes per write. */
int bd_put(struct client *cl, const char *local);

#endif
