/* SPDX-License-Identifier: MIT */
/* Profile files appear whole or not at all: data goes to a temporary file in the same
 * directory, renamed over the destination when complete. "-" means stdout. */
#ifndef PW_OUTFILE_H
#define PW_OUTFILE_H

#include <stdio.h>

struct outfile {
	FILE *f;
	char *path;	/* destination, NULL for stdout */
	char *tmp_path; /* temporary file, NULL for stdout and for non-regular files */
};

/* Create the temporary file now, so an unwritable destination fails before recording.
 * A destination that exists and is not a regular file (/dev/null, a FIFO, a terminal) is
 * opened and written in place: renaming over it would replace the device. 0 or -errno. */
int outfile_open(struct outfile *o, const char *path);
/* Flush, fsync-free close and rename into place. 0 or a negative errno (file removed). */
int outfile_commit(struct outfile *o);
/* Remove the temporary file; nothing is left behind. */
void outfile_abort(struct outfile *o);

#endif
