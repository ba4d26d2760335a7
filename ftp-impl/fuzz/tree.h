/* tree.h - the small directory tree the server targets serve: files, a
 * sub-directory, a dot file, a symlink that stays inside and one that
 * points out of the root.  Made once per process under $TMPDIR. */
#ifndef FUZZ_TREE_H
#define FUZZ_TREE_H

/* Make the tree; returns its real path (aborts on failure). */
const char *tree_make(void);
/* Remove whatever a run added (uploads) and restore the files' contents,
 * if the run may have changed them: always, unless the target links
 * wraps.o, which marks the tree only when a file is opened for writing. */
void tree_restore(void);
void tree_mark_dirty(void);

/* An empty folder for the client's downloads (made once per process), and
 * emptied again after a run. */
const char *tree_outdir(void);
void tree_outdir_clear(void);

#endif
