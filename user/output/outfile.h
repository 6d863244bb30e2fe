/* SPDX-License-Identifier: MIT */
/* Where a profile goes, opened so that no other user's symbolic link or race can redirect a
 * write made as root. A regular file appears whole or not at all: data goes to a temporary
 * file in the same directory, renamed over the destination when complete. */
#ifndef PW_OUTFILE_H
#define PW_OUTFILE_H

#include <stdio.h>
#include <sys/types.h>

struct outfile {
	FILE *f;
	char *path;		      /* destination as named, NULL for stdout */
	char *name;		      /* its last component, looked up in dirfd */
	char *tmp_name;		      /* temporary file in dirfd; NULL when none is pending */
	int dirfd;		      /* the directory of path, open only while tmp_name is set */
	dev_t tmp_dev;		      /* the temporary file we created: a name that no longer */
	ino_t tmp_ino;		      /* leads to it is not ours to rename or remove */
	struct outfile *next_pending; /* list of temporary files to remove at exit() */
	char why[512]; /* after a failure: the reason, to follow "cannot write PATH: " */
};

/* Open the destination now, so that an unwritable one fails before recording.
 * - NULL, "-" and "/dev/stdout" are stdout; "/dev/stderr" and "/dev/fd/N" use that
 *   descriptor of ours.
 * - The directory part is walked one component at a time; a symbolic link there is
 *   followed only if owned by root or by the effective uid.
 * - The last component is never followed: a symbolic link there is refused.
 * - An existing FIFO or device is written in place (never created nor truncated); a FIFO
 *   must already have a reader. Directories and sockets are refused.
 * - Anything else gets a new temporary file ".NAME.pywalk-XXXXXX" (mode 0666 minus the
 *   umask) in the same directory; nothing existing is touched before outfile_commit().
 * Every descriptor is close-on-exec. 0 or a negative errno, with the reason in o->why. */
int outfile_open(struct outfile *o, const char *path);
/* A regular file `name` in the directory open as dirfd (the caller keeps it), made as
 * above but of `mode` minus the umask: for a directory checked once and held, whatever
 * its path leads to later. An existing `name` that is not a regular file (a symbolic link,
 * a FIFO) is refused. `shown` is the path the messages name. */
int outfile_open_in(struct outfile *o, int dirfd, const char *name, const char *shown, mode_t mode);
/* Flush, close (no fsync) and rename the temporary file over the destination, which
 * replaces whatever is there without following it. 0 or a negative errno, with the reason
 * in o->why; the temporary file is removed on failure. */
int outfile_commit(struct outfile *o);
/* Close and remove the temporary file; nothing is left behind. Safe on a zeroed struct.
 * A temporary file still pending when the process calls exit() is removed too. */
void outfile_abort(struct outfile *o);

#endif
