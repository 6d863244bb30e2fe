// SPDX-License-Identifier: MIT
/* The export-dir sink: one gzipped pprof file per window and process, named so that the
 * files sort by time, and pruned by age and by total size after each write. Only files
 * with its own name pattern that are regular files are ever removed.
 *
 * The files are written as root: the directory and every directory above it must be
 * root's or ours and not writable by others (a sticky one, like /tmp, excepted above it),
 * checked once at start on descriptors opened one component at a time without following
 * links. The directory stays open, and every file is made relative to that descriptor
 * (outfile.c: a temporary file of mode 0640 renamed into place, no link followed), so a
 * path swapped later leads nowhere we write. */
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

#include "output/outfile.h"
#include "agent/sinks.h"

/* The directory is 0750 and its files 0640: a group the administrator chose may read them */
#define FILE_MODE 0640

struct dir_sink {
	char dir[4096];
	int dfd;		      /* the directory checked at start */
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
	dfd = openat(d->dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
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
		files[n].mtime_ns =
			(uint64_t)st.st_mtim.tv_sec * 1000000000ull + st.st_mtim.tv_nsec;
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
	char path[4608], name[256], stamp[32];
	struct tm tm;
	int err;

	gmtime_r(&secs, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%S", &tm);
	snprintf(name, sizeof(name), "%s.%03uZ-%s-%s-%llu" NAME_SUFFIX, stamp,
		 (unsigned int)(it->from_ns / 1000000ull % 1000), it->service, pid ? pid : "0",
		 (unsigned long long)d->seq++);
	snprintf(path, sizeof(path), "%s/%s", d->dir, name);
	err = outfile_open_in(&out, d->dfd, name, path, FILE_MODE);
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
	{
		/* by the wall clock, which stamped the files' times: the window's end is on the
		 * windows' time line, which a step back of the clock leaves ahead of it (an hour
		 * back would have made every file an hour old) */
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		prune(d, (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec);
	}
	return EXPORT_OK;
}

static void dir_free(void *ctx)
{
	struct dir_sink *d = ctx;

	if (d && d->dfd >= 0)
		close(d->dfd);
	free(d);
}

static const struct sink_ops dir_ops = {
	.kind = "export-dir",
	.deliver = dir_deliver,
	.free = dir_free,
};

/* Whether a directory as fstat saw it may hold files root writes: root's or ours, and not
 * writable by others, unless (above the export directory) sticky, where others cannot move
 * what is ours. */
static bool dir_is_safe(const struct stat *st, bool sticky_ok)
{
	if (!S_ISDIR(st->st_mode) || (st->st_uid != 0 && st->st_uid != geteuid()))
		return false;
	return !(st->st_mode & 022) || (sticky_ok && (st->st_mode & S_ISVTX));
}

/* Open `real` (absolute, no links: realpath's) one component at a time without following
 * a link, checking each directory on its descriptor. The directory's descriptor, or -1
 * with the reason in why. */
static int open_checked(const char *real, char *why, size_t why_size)
{
	char prefix[4096], comp[256];
	const char *p = real;
	size_t plen = 0;
	int cur = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	prefix[0] = 0;
	while (cur >= 0) {
		const char *end;
		struct stat st;
		int next;

		while (*p == '/')
			p++;
		end = strchrnul(p, '/');
		/* cur is the export directory once nothing is left of the path */
		if (fstat(cur, &st) || !dir_is_safe(&st, *p)) {
			snprintf(why, why_size,
				 "%s is writable by other users or not ours: the export directory "
				 "and the directories above it must be owned by root (or pywalk's "
				 "user) and not group- or world-writable",
				 prefix[0] ? prefix : "/");
			close(cur);
			return -1;
		}
		if (!*p)
			return cur;
		if ((size_t)(end - p) >= sizeof(comp) ||
		    plen + 1 + (size_t)(end - p) >= sizeof(prefix)) {
			snprintf(why, why_size, "%s: a path component is too long", real);
			close(cur);
			return -1;
		}
		memcpy(comp, p, (size_t)(end - p));
		comp[end - p] = 0;
		plen += (size_t)snprintf(prefix + plen, sizeof(prefix) - plen, "/%s", comp);
		next = openat(cur, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(cur);
		cur = next;
		p = end;
		if (cur < 0) {
			if (errno == ENOTDIR)
				snprintf(why, why_size, "%s is not a directory", prefix);
			else
				snprintf(why, why_size, "cannot open %s: %s", prefix,
					 strerror(errno));
			return -1;
		}
	}
	snprintf(why, why_size, "cannot open /: %s", strerror(errno));
	return -1;
}

struct sink *sink_dir_new(const char *dir, uint64_t keep_ns, uint64_t keep_bytes,
			  const struct sink_opts *opts, char *why, size_t why_size)
{
	struct dir_sink *d = calloc(1, sizeof(*d));

	if (!d) {
		snprintf(why, why_size, "out of memory");
		return NULL;
	}
	d->dfd = -1;
	if (mkdir(dir, 0750) && errno != EEXIST) {
		snprintf(why, why_size, "cannot create %s: %s", dir, strerror(errno));
		free(d);
		return NULL;
	}
	if (!realpath(dir, d->dir)) {
		snprintf(why, why_size, "%s is not a directory", dir);
		free(d);
		return NULL;
	}
	d->dfd = open_checked(d->dir, why, why_size);
	if (d->dfd < 0) {
		free(d);
		return NULL;
	}
	d->keep_ns = keep_ns;
	d->keep_bytes = keep_bytes;
	/* sink__new frees d when it fails */
	return sink__new("export-dir", &dir_ops, d, opts);
}
