/* ls.h - builds directory listings: LIST (ls -l style), NLST (names),
 * MLSD (RFC 3659 facts). */
#ifndef FTP_LS_H
#define FTP_LS_H

#include "str.h"

enum ls_kind { LS_LIST, LS_NLST, LS_MLSD };

/* List real path `real` (a directory: its entries matching pattern, NULL for
 * all; a file: that file) into out, each line ending "\r\n".  Names starting
 * with '.' are hidden.  -1 on error (errno), -2 if the listing is too big. */
int ls_build(const char *real, enum ls_kind kind, const char *pattern,
             struct buf *out);

#endif
