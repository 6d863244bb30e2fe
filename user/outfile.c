// SPDX-License-Identifier: MIT
/* Temporary-file-and-rename output. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outfile.h"

int outfile_open(struct outfile *o, const char *path)
{
	const char *slash;
	struct stat st;
	int fd;

	memset(o, 0, sizeof(*o));
	if (!path || !strcmp(path, "-")) {
		o->f = stdout;
		return 0;
	}
	if (!stat(path, &st) && !S_ISREG(st.st_mode)) {
		if (S_ISDIR(st.st_mode))
			return -EISDIR;
		o->f = fopen(path, "we");
		if (!o->f)
			return -errno;
		o->path = strdup(path);
		if (!o->path) {
			fclose(o->f);
			o->f = NULL;
			return -ENOMEM;
		}
		return 0;
	}
	slash = strrchr(path, '/');
	o->path = strdup(path);
	if (asprintf(&o->tmp_path, "%.*s.pywalk-XXXXXX", slash ? (int)(slash - path + 1) : 0,
		     path) < 0)
		o->tmp_path = NULL;
	if (!o->path || !o->tmp_path) {
		outfile_abort(o);
		return -ENOMEM;
	}
	fd = mkstemp(o->tmp_path);
	if (fd < 0) {
		int err = -errno;

		free(o->tmp_path);
		o->tmp_path = NULL;
		outfile_abort(o);
		return err;
	}
	fchmod(fd, 0644);
	o->f = fdopen(fd, "w");
	if (!o->f) {
		int err = -errno;

		close(fd);
		outfile_abort(o);
		return err;
	}
	return 0;
}

int outfile_commit(struct outfile *o)
{
	int err = 0;

	if (!o->path) {
		if (fflush(stdout))
			err = -errno;
		return err;
	}
	if (fclose(o->f))
		err = -errno;
	o->f = NULL;
	if (o->tmp_path) {
		if (!err && rename(o->tmp_path, o->path))
			err = -errno;
		if (err)
			unlink(o->tmp_path);
	}
	free(o->tmp_path);
	free(o->path);
	o->tmp_path = o->path = NULL;
	return err;
}

void outfile_abort(struct outfile *o)
{
	if (o->f && o->f != stdout)
		fclose(o->f);
	if (o->tmp_path)
		unlink(o->tmp_path);
	free(o->tmp_path);
	free(o->path);
	memset(o, 0, sizeof(*o));
}
