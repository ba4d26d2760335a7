/* memxp.h - an in-memory transport for the fuzz targets.  It implements
 * transport.h over a script of messages taken from the fuzz input instead
 * of sockets; a target links memxp.o in place of transport.o.
 *
 * The script: the input is cut into lines after every '\n'.  A line that
 * starts with byte 0x01 begins a data message (the 0x01 dropped), and each
 * following line that starts with 0x02 adds itself to it (the 0x02
 * dropped): a data message arrives on stream 1 of an SCTP control
 * association, and it is what a data connection delivers (one message per
 * data connection, then its end).  Every other line is one message of
 * control input (stream 0).  Over TCP consecutive
 * control messages run together as one byte stream.  A receive returns at
 * most `limit` bytes (0: no limit), so lines also arrive in pieces.
 *
 * Connections are file descriptors of /dev/null (readable at once for
 * poll), so the programs' poll and close calls work unchanged and no
 * socket is ever opened. */
#ifndef FUZZ_MEMXP_H
#define FUZZ_MEMXP_H

#include <stddef.h>
#include <stdint.h>

#include "transport.h"

#define MEMXP_DATA_MARK 0x01
#define MEMXP_DATA_MORE 0x02

struct memxp_cfg {
  enum xp_proto proto;
  unsigned streams; /* streams each way on SCTP (TCP: 1) */
  size_t limit;     /* longest piece one receive returns (0: no limit) */
  int foreign_peer; /* data connections come from another host */
  int refuse_data;  /* listen/connect of data connections fail */
};

/* A settings byte (the first byte of most inputs) as a configuration. */
void memxp_cfg_from_byte(uint8_t b, struct memxp_cfg *cfg);

/* Start a run over the script data[0..size). */
void memxp_begin(const uint8_t *data, size_t size, const struct memxp_cfg *cfg);
/* The control connection, as accepted by a server (the client gets it from
 * its first xp_connect).  -1 if no descriptor could be opened. */
int memxp_accept_ctrl(struct xp_conn *out);
/* Is fd one of the run's connections? */
int memxp_owns(int fd);
/* End the run: close every descriptor the run opened and still holds. */
void memxp_end(void);

/* Everything sent on stream 0 of the control connection so far (the first
 * 1 MiB of it; *truncated set if there was more). */
const char *memxp_ctrl_out(size_t *len, int *truncated);
/* Bytes sent on data connections and on stream 1 of the control. */
uint64_t memxp_data_out(void);

#endif
