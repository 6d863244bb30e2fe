// SPDX-License-Identifier: MIT
/* The export-dir sink: one gzipped pprof file per window and process, written as -o writes
 * (outfile.c: no symlink followed, temporary file renamed into place), named so that the
 * files sort by time, and pruned by age and by total size after each write. Only files
 * with its own name pattern that are regular files are ever removed. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "outfile.h"
#include "sinks.h"

struct dir_sink {
	char dir[4096];
	uint64_t keep_ns, keep_bytes; /* 0 = no limit */
	uint64_t seq;
};

/* "20261201T130512.123Z-<service>-<pid>-<seq>.pb.gz": the first 20 bytes sort by time */
#define NAME_SUFFIX ".pb.gz"

static bool is_ours(const char *name)
{
	size_t len = strlen(name);

	return len > 24 && name[8] == 'T' && name[19] == 'Z' && name[20] == '-' &&
	       !strcmp(name + len - strlen(NAME_SUFFIX), NAME_SUFFIX) &&
	       strspn(name, "0123456789") == 8;
}

struct old_file {
	char name[256];
	uint64_t mtime_ns, size;
};

static int cmp_old(const void *a, const void *b)
{
	const struct old_file *x = a, *y = b;

	/* names sort by the window's time; ties (never) by mtime */
	int c = strcmp(x->name, y->name);

	return c ? c : (x->mtime_ns > y->mtime_ns) - (x->mtime_ns < y->mtime_ns);
}

/* Remove our files older than keep_ns, then the oldest until the rest fit keep_bytes. */
static void prune(struct dir_sink *d, uint64_t now_ns)
{
	struct old_file *files = NULL;
	size_t n = 0, cap = 0;
	uint64_t total = 0;
	struct dirent *de;
	DIR *dir;
	int dfd;

	if (!d->keep_ns && !d->keep_bytes)
		return;
	dfd = open(d->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (dfd < 0)
		return;
	dir = fdopendir(dfd);
	if (!dir) {
		close(dfd);
		return;
	}
	while ((de = readdir(dir))) {
		struct stat st;

		if (!is_ours(de->d_name) || strlen(de->d_name) >= sizeof(files->name))
			continue;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			continue;
		if (n == cap) {
			struct old_file *g = realloc(files, (cap ? cap * 2 : 64) * sizeof(*files));

			if (!g)
				break;
			files = g;
			cap = cap ? cap * 2 : 64;
		}
		snprintf(files[n].name, sizeof(files[n].name), "%s", de->d_name);
		files[n].mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000ull + st.st_mtim.tv_nsec;
		files[n].size = (uint64_t)st.st_size;
		total += files[n].size;
		n++;
	}
	qsort(files, n, sizeof(*files), cmp_old);
	for (size_t i = 0; i < n; i++) {
		bool too_old = d->keep_ns && files[i].mtime_ns + d->keep_ns < now_ns;
		bool too_big = d->keep_bytes && total > d->keep_bytes;

		if (!too_old && !too_big)
			break;
		if (!unlinkat(dfd, files[i].name, 0))
			total -= files[i].size;
	}
	free(files);
	closedir(dir);
}

static enum export_result dir_deliver(void *ctx, const struct export_item *it, char *why,
				      size_t why_size)
{
	struct dir_sink *d = ctx;
	time_t secs = (time_t)(it->from_ns / 1000000000ull);
	const char *pid = export_item__get(it, "pid");
	struct outfile out = { 0 };
	char path[4608], stamp[32];
	struct tm tm;
	int err;

	gmtime_r(&secs, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%S", &tm);
	snprintf(path, sizeof(path), "%s/%s.%03uZ-%s-%s-%llu" NAME_SUFFIX, d->dir, stamp,
		 (unsigned int)(it->from_ns / 1000000ull % 1000), it->service, pid ? pid : "0",
		 (unsigned long long)d->seq++);
	err = outfile_open(&out, path);
	if (err) {
		snprintf(why, why_size, "cannot write %s: %s", path, out.why);
		return EXPORT_REJECT;
	}
	if (fwrite(it->pprof, 1, it->pprof_len, out.f) != it->pprof_len) {
		outfile_abort(&out);
		snprintf(why, why_size, "cannot write %s: %s", path, strerror(EIO));
		return EXPORT_RETRY;
	}
	err = outfile_commit(&out);
	if (err) {
		snprintf(why, why_size, "cannot write %s: %s", path, out.why);
		return EXPORT_RETRY; /* a full disk may clear */
	}
	prune(d, it->until_ns);
	return EXPORT_OK;
}

static void dir_free(void *ctx)
{
	free(ctx);
}

static const struct sink_ops dir_ops = {
	.kind = "export-dir",
	.deliver = dir_deliver,
	.free = dir_free,
};

struct sink *sink_dir_new(const char *dir, uint64_t keep_ns, uint64_t keep_bytes,
			  const struct sink_opts *opts, char *why, size_t why_size)
{
	struct dir_sink *d = calloc(1, sizeof(*d));
	struct stat st;

	if (!d) {
		snprintf(why, why_size, "out of memory");
		return NULL;
	}
	if (mkdir(dir, 0750) && errno != EEXIST) {
		snprintf(why, why_size, "cannot create %s: %s", dir, strerror(errno));
		free(d);
		return NULL;
	}
	/* the files are written as root: a directory another user can write (or swap) would
	 * let them choose what gets pruned or read the profiles */
	if (!realpath(dir, d->dir) || stat(d->dir, &st) || !S_ISDIR(st.st_mode)) {
		snprintf(why, why_size, "%s is not a directory", dir);
		free(d);
		return NULL;
	}
	if ((st.st_uid != 0 && st.st_uid != geteuid()) || (st.st_mode & 022)) {
		snprintf(why, why_size,
			 "%s is writable by other users or not ours: the export directory must "
			 "be owned by root (or pywalk's user) and not group- or world-writable",
			 d->dir);
		free(d);
		return NULL;
	}
	d->keep_ns = keep_ns;
	d->keep_bytes = keep_bytes;
	return sink__new("export-dir", &dir_ops, d, opts);
}
