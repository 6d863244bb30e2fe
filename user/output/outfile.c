// SPDX-License-Identifier: MIT
/* Opening -o safely as root: the directory is resolved once to a descriptor, trusting only
 * symbolic links owned by root or by us, and every later step is an *at() call on that
 * descriptor that never follows the last component, so a link or a swap planted by another
 * user cannot redirect the write. Regular files go through a temporary file and a rename. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "output/outfile.h"

#define MAX_LINK_HOPS 40 /* as many as the kernel follows in one lookup */
#define TMP_TRIES 100
#define TMP_SUFFIX ".pywalk-"
#define TMP_RANDOM 6

static struct outfile *pending; /* temporary files exit() removes */
static pid_t pending_pid;	/* their creator: a forked child leaves them alone */
static bool atexit_registered;

__attribute__((format(printf, 3, 4))) static int set_why(struct outfile *o, int err,
							 const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(o->why, sizeof(o->why), fmt, ap);
	va_end(ap);
	return err;
}

static int set_errno_why(struct outfile *o, int err)
{
	return set_why(o, err, "%s", strerror(-err));
}

/* -errno, or -EIO for a stream error that left errno unset */
static int stream_err(void)
{
	return errno ? -errno : -EIO;
}

/* Is dirfd/name still the temporary file we created? */
static bool tmp_is_ours(const struct outfile *o)
{
	struct stat st;

	return !fstatat(o->dirfd, o->tmp_name, &st, AT_SYMLINK_NOFOLLOW) && S_ISREG(st.st_mode) &&
	       st.st_dev == o->tmp_dev && st.st_ino == o->tmp_ino;
}

static void unregister(struct outfile *o)
{
	for (struct outfile **p = &pending; *p; p = &(*p)->next_pending) {
		if (*p == o) {
			*p = o->next_pending;
			break;
		}
	}
	o->next_pending = NULL;
}

static void remove_pending_at_exit(void)
{
	if (getpid() != pending_pid)
		return;
	for (struct outfile *o = pending; o; o = o->next_pending)
		if (tmp_is_ours(o))
			unlinkat(o->dirfd, o->tmp_name, 0);
}

static void track(struct outfile *o)
{
	if (!atexit_registered && !atexit(remove_pending_at_exit))
		atexit_registered = true;
	pending_pid = getpid();
	o->next_pending = pending;
	pending = o;
}

/* Close everything, removing the temporary file if it is still ours; keeps o->why. */
static void release(struct outfile *o)
{
	if (o->f && o->f != stdout)
		fclose(o->f);
	if (o->tmp_name) {
		unregister(o);
		if (tmp_is_ours(o))
			unlinkat(o->dirfd, o->tmp_name, 0);
		close(o->dirfd);
	}
	free(o->tmp_name);
	free(o->name);
	free(o->path);
	o->f = NULL;
	o->tmp_name = o->name = o->path = NULL;
	o->dirfd = -1;
}

/* "/dev/stderr", "/dev/fd/N", "/proc/self/fd/N": a descriptor the caller gave us, which
 * the last component (a symbolic link) could not name safely. -1 when not one. */
static int named_fd(const char *path)
{
	const char *num = NULL;
	char *end;
	long n;

	if (!strcmp(path, "/dev/stderr"))
		return 2;
	if (!strncmp(path, "/dev/fd/", 8))
		num = path + 8;
	else if (!strncmp(path, "/proc/self/fd/", 14))
		num = path + 14;
	if (!num || *num < '0' || *num > '9')
		return -1;
	errno = 0;
	n = strtol(num, &end, 10);
	if (errno || *end || n > INT_MAX)
		return -1;
	return (int)n;
}

static int open_named_fd(struct outfile *o, int n)
{
	int fd, flags, err = 0;

	flags = fcntl(n, F_GETFL);
	if (flags < 0)
		return set_why(o, -errno, "descriptor %d is not open", n);
	if ((flags & O_ACCMODE) == O_RDONLY)
		return set_why(o, -EBADF, "descriptor %d is open for reading only", n);
	fd = fcntl(n, F_DUPFD_CLOEXEC, 3);
	if (fd < 0)
		return set_errno_why(o, -errno);
	o->f = fdopen(fd, "w");
	if (!o->f) {
		err = set_errno_why(o, -errno);
		close(fd);
	}
	return err;
}

/* Append "/comp" (or "comp") to the path shown in messages; truncation only shortens them */
static void shown_add(char *shown, size_t size, const char *comp)
{
	size_t len = strlen(shown);

	if (len && shown[len - 1] != '/' && len + 1 < size)
		shown[len++] = '/';
	snprintf(shown + len, size - len, "%s", comp);
}

/* Open the directory named by the first len bytes of dir ("" is the working directory) as
 * an O_PATH descriptor in *dirfd, one component at a time. A symbolic link is followed only
 * when root or we own it: anyone else's could point us anywhere, as the kernel's
 * protected_symlinks rule says for sticky directories, here for every directory. */
static int open_dir(struct outfile *o, const char *dir, size_t len, int *dirfd)
{
	char rest[PATH_MAX], next[PATH_MAX], target[PATH_MAX], shown[PATH_MAX] = "";
	uid_t euid = geteuid();
	int cur, hops = 0, err = 0;
	char *p = rest;

	if (len >= sizeof(rest))
		return set_errno_why(o, -ENAMETOOLONG);
	memcpy(rest, dir, len);
	rest[len] = '\0';
	if (rest[0] == '/')
		strcpy(shown, "/");
	cur = open(rest[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (cur < 0)
		return set_errno_why(o, -errno);
	while (!err) {
		size_t shown_len = strlen(shown);
		char *comp = p, *end;
		struct stat st;
		ssize_t n;
		int fd;

		while (*comp == '/')
			comp++;
		if (!*comp)
			break;
		end = strchrnul(comp, '/');
		p = *end ? end + 1 : end;
		*end = '\0';
		if (!strcmp(comp, "."))
			continue;
		shown_add(shown, sizeof(shown), comp);
		fd = openat(cur, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			err = set_why(o, -errno, "%s: %s", shown, strerror(errno));
			break;
		}
		if (fstat(fd, &st)) {
			err = set_errno_why(o, -errno);
		} else if (S_ISDIR(st.st_mode)) {
			close(cur);
			cur = fd;
			continue;
		} else if (!S_ISLNK(st.st_mode)) {
			err = set_why(o, -ENOTDIR, "%s is not a directory", shown);
		} else if (st.st_uid != 0 && st.st_uid != euid) {
			err = set_why(o, -EPERM,
				      "refusing to follow the symbolic link %s, owned by uid %u "
				      "(only links owned by root or by you are followed); name "
				      "its target instead",
				      shown, (unsigned)st.st_uid);
		} else if (++hops > MAX_LINK_HOPS) {
			err = set_why(o, -ELOOP, "too many symbolic links at %s", shown);
		} else {
			/* the link is pinned by fd: we read the very link whose owner we checked */
			n = readlinkat(fd, "", target, sizeof(target));
			if (n < 0)
				err = set_errno_why(o, -errno);
			else if ((size_t)n >= sizeof(target) ||
				 snprintf(next, sizeof(next), "%.*s/%s", (int)n, target, p) >=
					 (int)sizeof(next))
				err = set_errno_why(o, -ENAMETOOLONG);
		}
		close(fd);
		if (err)
			break;
		/* go on from the link's directory (cur), or from / for an absolute target */
		strcpy(rest, next);
		p = rest;
		shown[shown_len] = '\0';
		if (rest[0] == '/') {
			close(cur);
			strcpy(shown, "/");
			cur = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
			if (cur < 0)
				err = set_errno_why(o, -errno);
		}
	}
	if (!err)
		*dirfd = cur;
	else if (cur >= 0)
		close(cur);
	return err;
}

static void fill_random(unsigned char *buf, size_t n)
{
	static uint64_t x;
	struct timespec ts;

	if (getrandom(buf, n, GRND_NONBLOCK) == (ssize_t)n)
		return;
	/* no entropy yet: a guessable name costs a retry at most, O_EXCL makes it safe */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	x ^= (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32);
	for (size_t i = 0; i < n; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		buf[i] = (unsigned char)(x >> 56);
	}
}

/* Create the temporary file next to the destination: O_EXCL|O_NOFOLLOW, so it is a new
 * inode of ours whatever was planted, of `mode` minus the umask. */
static int open_temp(struct outfile *o, int dirfd, mode_t mode)
{
	static const char alnum[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
	/* ".NAME.pywalk-XXXXXX" fits NAME_MAX: a long NAME is cut in the temporary name */
	int keep = NAME_MAX - (int)(1 + strlen(TMP_SUFFIX) + TMP_RANDOM);
	char tmp[NAME_MAX + 1];
	struct stat st;
	int fd = -1, err = 0;

	for (int i = 0; i < TMP_TRIES && fd < 0; i++) {
		unsigned char rnd[TMP_RANDOM];
		char suffix[TMP_RANDOM + 1];

		fill_random(rnd, sizeof(rnd));
		for (int j = 0; j < TMP_RANDOM; j++)
			suffix[j] = alnum[rnd[j] % (sizeof(alnum) - 1)];
		suffix[TMP_RANDOM] = '\0';
		snprintf(tmp, sizeof(tmp), ".%.*s" TMP_SUFFIX "%s", keep, o->name, suffix);
		fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0)
		err = -errno;
	else if (fstat(fd, &st))
		err = -errno;
	else if (!(o->tmp_name = strdup(tmp)))
		err = -ENOMEM;
	if (!err) {
		/* from here release() removes it, if the name still leads to our file */
		o->dirfd = dirfd;
		o->tmp_dev = st.st_dev;
		o->tmp_ino = st.st_ino;
		track(o);
		o->f = fdopen(fd, "w");
		if (!o->f)
			err = -errno;
	}
	if (err) {
		set_errno_why(o, err);
		/* created a moment ago and not yet known to release() */
		if (fd >= 0 && !o->tmp_name)
			unlinkat(dirfd, tmp, 0);
		if (fd >= 0)
			close(fd);
	}
	return err;
}

/* An existing FIFO or device, as fstatat saw it in `seen`: opened in place, never created
 * nor truncated. O_NONBLOCK turns a FIFO without a reader into ENXIO instead of a hang. */
static int open_in_place(struct outfile *o, int dirfd, const struct stat *seen)
{
	struct stat st;
	int fd, flags, err = 0;

	fd = openat(dirfd, o->name, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		err = -errno;
		if (err == -ENXIO && S_ISFIFO(seen->st_mode))
			return set_why(o, err,
				       "no process is reading FIFO %s; start the reader first",
				       o->path);
		if (err == -ELOOP)
			return set_why(o, err,
				       "%s became a symbolic link while it was being opened; "
				       "refusing to write through it",
				       o->path);
		return set_errno_why(o, err);
	}
	if (fstat(fd, &st)) {
		err = set_errno_why(o, -errno);
	} else if (st.st_dev != seen->st_dev || st.st_ino != seen->st_ino ||
		   (st.st_mode & S_IFMT) != (seen->st_mode & S_IFMT)) {
		err = set_why(o, -EAGAIN, "%s was replaced while it was being opened; try again",
			      o->path);
	} else {
		/* writes block normally from here on */
		flags = fcntl(fd, F_GETFL);
		if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK))
			err = set_errno_why(o, -errno);
	}
	if (!err) {
		o->f = fdopen(fd, "w");
		if (!o->f)
			err = set_errno_why(o, -errno);
	}
	if (err && !o->f)
		close(fd);
	return err;
}

int outfile_open(struct outfile *o, const char *path)
{
	const char *slash, *name;
	struct stat st;
	int dirfd = -1, fd, err;

	memset(o, 0, sizeof(*o));
	o->dirfd = -1;
	if (!path || !strcmp(path, "-") || !strcmp(path, "/dev/stdout")) {
		o->f = stdout;
		return 0;
	}
	o->path = strdup(path);
	slash = strrchr(path, '/');
	name = slash ? slash + 1 : path;
	o->name = strdup(name);
	if (!o->path || !o->name) {
		err = set_errno_why(o, -ENOMEM);
		goto out;
	}
	if (!*path) {
		err = set_errno_why(o, -ENOENT);
		goto out;
	}
	fd = named_fd(path);
	if (fd >= 0) {
		err = open_named_fd(o, fd);
		goto out;
	}
	if (!*name || !strcmp(name, ".") || !strcmp(name, "..")) {
		err = set_errno_why(o, -EISDIR);
		goto out;
	}
	err = open_dir(o, path, slash ? (size_t)(slash - path + 1) : 0, &dirfd);
	if (err)
		goto out;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW)) {
		if (errno == ENOENT)
			err = open_temp(o, dirfd, 0666);
		else
			err = set_errno_why(o, -errno);
	} else if (S_ISLNK(st.st_mode)) {
		err = set_why(o, -ELOOP,
			      "refusing to write through the symbolic link %s; name its target "
			      "instead",
			      path);
	} else if (S_ISREG(st.st_mode)) {
		err = open_temp(o, dirfd, 0666);
	} else if (S_ISDIR(st.st_mode)) {
		err = set_errno_why(o, -EISDIR);
	} else if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
		err = open_in_place(o, dirfd, &st);
	} else {
		err = set_why(o, -EOPNOTSUPP,
			      "it is a socket; write to a regular file, a FIFO or a device");
	}
out:
	/* open_temp keeps dirfd for the rename; nothing else needs it */
	if (dirfd >= 0 && o->dirfd != dirfd)
		close(dirfd);
	if (err)
		release(o);
	return err;
}

int outfile_open_in(struct outfile *o, int dirfd, const char *name, const char *shown, mode_t mode)
{
	struct stat st;
	int fd, err;

	memset(o, 0, sizeof(*o));
	o->dirfd = -1;
	o->path = strdup(shown);
	o->name = strdup(name);
	if (!o->path || !o->name || strlen(shown) < strlen(name)) {
		err = set_errno_why(o, -ENOMEM);
		goto out;
	}
	if (!*name || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, "..")) {
		err = set_errno_why(o, -EINVAL);
		goto out;
	}
	fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0) {
		err = set_errno_why(o, -errno);
		goto out;
	}
	if (!fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) && !S_ISREG(st.st_mode))
		err = S_ISLNK(st.st_mode) ? set_why(o, -ELOOP,
						    "refusing to write through the "
						    "symbolic link %s",
						    shown)
					  : set_why(o, -EEXIST,
						    "%s exists and is not a regular "
						    "file",
						    shown);
	else
		err = open_temp(o, fd, mode);
	/* open_temp keeps fd for the rename */
	if (o->dirfd != fd)
		close(fd);
out:
	if (err)
		release(o);
	return err;
}

/* Rename the complete temporary file over the destination, if the name still leads to our
 * file: whoever can write the directory may have swapped it meanwhile. */
static int rename_into_place(struct outfile *o)
{
	int dir_len = (int)(strlen(o->path) - strlen(o->name));

	if (!tmp_is_ours(o))
		return set_why(o, -ESTALE,
			       "the temporary file %.*s%s was replaced or removed by someone else; "
			       "nothing was written",
			       dir_len, o->path, o->tmp_name);
	if (renameat(o->dirfd, o->tmp_name, o->dirfd, o->name))
		return set_errno_why(o, -errno);
	/* renamed: no temporary file is left to remove */
	unregister(o);
	close(o->dirfd);
	free(o->tmp_name);
	o->tmp_name = NULL;
	return 0;
}

int outfile_commit(struct outfile *o)
{
	int err = 0;

	o->why[0] = '\0';
	if (!o->f)
		return set_errno_why(o, -EBADF);
	errno = 0;
	if (fflush(o->f) || ferror(o->f))
		err = set_errno_why(o, stream_err());
	/* a close error is a write error too: some filesystems report them only there */
	if (o->f != stdout && fclose(o->f) && !err)
		err = set_errno_why(o, -errno);
	o->f = NULL;
	if (!err && o->tmp_name)
		err = rename_into_place(o);
	release(o);
	return err;
}

void outfile_abort(struct outfile *o)
{
	release(o);
	memset(o, 0, sizeof(*o));
	o->dirfd = -1;
}
