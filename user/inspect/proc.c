// SPDX-License-Identifier: MIT
/* /proc parsing and process_vm_readv. Knows nothing about Python. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include "inspect/proc.h"
#include "lib/util.h"

int proc_parse_maps_line(const char *line, struct proc_map *out)
{
	int name_at = 0;

	memset(out, 0, sizeof(*out));
	if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s %" SCNx64 " %x:%x %" SCNu64 " %n",
		   &out->start, &out->end, out->perms, &out->offset, &out->dev_major,
		   &out->dev_minor, &out->inode, &name_at) < 7)
		return -EINVAL;
	if (name_at > 0 && line[name_at] == '/') {
		size_t len = strcspn(line + name_at, "\n");

		out->path = strndup(line + name_at, len);
		if (!out->path)
			return -ENOMEM;
	}
	return 0;
}

int proc_read_maps(pid_t pid, struct proc_maps *out)
{
	char path[64], *line = NULL;
	size_t line_cap = 0;
	FILE *f;
	int err = 0;

	memset(out, 0, sizeof(*out));
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	while (getline(&line, &line_cap, f) > 0) {
		struct proc_map m;

		err = proc_parse_maps_line(line, &m);
		if (err == -EINVAL) {
			err = 0; /* not a mapping line */
			continue;
		}
		if (err)
			break;
		err = grow_array((void **)&out->maps, &out->cap, out->n + 1, sizeof(m));
		if (err) {
			free(m.path);
			break;
		}
		out->maps[out->n++] = m;
	}
	free(line);
	fclose(f);
	if (err)
		proc_maps_free(out);
	else if (!out->n)
		err = proc_is_alive(pid) ? 0 : -ESRCH;
	return err;
}

void proc_maps_free(struct proc_maps *maps)
{
	if (!maps)
		return;
	for (size_t i = 0; i < maps->n; i++)
		free(maps->maps[i].path);
	free(maps->maps);
	memset(maps, 0, sizeof(*maps));
}

/* O_PATH open of `path` below `dirfd` with no symlink followed: nothing is opened for I/O yet
 * (a FIFO or a device planted there cannot block us or react to being opened). */
static int open_path_nofollow(int dirfd, const char *path, bool in_root)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC,
		.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
			   (in_root ? RESOLVE_IN_ROOT : 0),
	};
	long fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));

	return fd >= 0 ? (int)fd : -errno;
}

/* Is the file open on `fd` a regular file, and the very one the mapping maps? */
static bool is_the_mapped_file(int fd, const struct proc_map *map)
{
	struct stat st;

	return !fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_ino == map->inode &&
	       major(st.st_dev) == map->dev_major && minor(st.st_dev) == map->dev_minor;
}

int proc_open_mapped_path(pid_t pid, const struct proc_map *map)
{
	char path[96];
	int fd, err, root;

	/* the kernel's own link to the mapped file (needs CAP_SYS_ADMIN or
	 * CAP_CHECKPOINT_RESTORE): it cannot be anything else */
	snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, pid, map->start,
		 map->end);
	fd = open(path, O_PATH | O_CLOEXEC);
	if (fd >= 0) {
		/* a mapped device (a GPU, say) is never opened for I/O: only regular files */
		if (is_the_mapped_file(fd, map))
			return fd;
		close(fd);
		return -ESTALE;
	}
	err = -errno;
	if (!map->path || map->path[0] != '/')
		return err;
	/* Without it, the path the maps line shows, which a target can redirect (rename a
	 * directory, plant a symlink or a FIFO): resolved in the target's root, then in ours
	 * (a chroot in our mount namespace shows our paths), with no symlink followed, and
	 * accepted only as a regular file with the mapping's device and inode. */
	snprintf(path, sizeof(path), "/proc/%d/root", pid);
	root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	for (int i = 0; i < 2 && fd < 0; i++) {
		int pfd;

		if (i == 0 && root < 0)
			continue;
		pfd = i == 0 ? open_path_nofollow(root, map->path, true)
			     : open_path_nofollow(AT_FDCWD, map->path, false);
		if (pfd < 0) {
			err = pfd;
		} else if (is_the_mapped_file(pfd, map)) {
			fd = pfd;
		} else {
			err = -ESTALE;
			close(pfd);
		}
	}
	if (root >= 0)
		close(root);
	return fd >= 0 ? fd : err;
}

int proc_reopen_for_reading(int path_fd)
{
	char self[64];
	int fd;

	snprintf(self, sizeof(self), "/proc/self/fd/%d", path_fd);
	fd = open(self, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	return fd >= 0 ? fd : -errno;
}

int proc_open_mapped_file(pid_t pid, const struct proc_map *map)
{
	int pfd = proc_open_mapped_path(pid, map), fd;

	if (pfd < 0)
		return pfd;
	fd = proc_reopen_for_reading(pfd);
	close(pfd);
	return fd;
}

int proc_read_mem(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { .iov_base = buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)addr, .iov_len = len };
	ssize_t n;

	if (!len)
		return 0;
	n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

/* The fields of /proc/PID/stat after the comm: the comm may hold any byte, ')' and
 * newlines included, so they start after the last ')' of the whole file. */
static int read_stat_fields(pid_t pid, char *buf, size_t size, char **fields)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -ESRCH;
	buf[n] = 0;
	*fields = strrchr(buf, ')');
	if (!*fields || (*fields)[1] != ' ')
		return -EINVAL;
	*fields += 2;
	return 0;
}

bool proc_is_alive(pid_t pid)
{
	char buf[1024], *f;

	if (pid <= 0 || read_stat_fields(pid, buf, sizeof(buf), &f))
		return false;
	return f[0] != 'Z' && f[0] != 'X';
}

int proc_read_start_time(pid_t pid, uint64_t *ticks)
{
	char buf[1024], *f, *end;
	int err;

	if (pid <= 0)
		return -ESRCH;
	err = read_stat_fields(pid, buf, sizeof(buf), &f);
	if (err)
		return err;
	/* starttime is field 22; f starts at field 3 (state) */
	for (int i = 3; i < 22; i++) {
		f = strchr(f, ' ');
		if (!f)
			return -EINVAL;
		f++;
	}
	*ticks = strtoull(f, &end, 10);
	return end == f ? -EINVAL : 0;
}

pid_t proc_read_tgid(pid_t pid)
{
	char path[64], buf[256];
	FILE *f;
	pid_t tgid = -ENOENT;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(buf, sizeof(buf), f)) {
		if (!strncmp(buf, "Tgid:", 5)) {
			tgid = atoi(buf + 5);
			break;
		}
	}
	fclose(f);
	return tgid;
}

bool proc_self_in_initial_userns(void)
{
	unsigned long inside, outside, count;
	FILE *f = fopen("/proc/self/uid_map", "re");
	bool initial = true;

	if (!f)
		return true; /* no user namespaces in this kernel */
	/* the initial namespace maps all of 0..2^32-2 onto itself in one line */
	if (fscanf(f, "%lu %lu %lu", &inside, &outside, &count) == 3)
		initial = !inside && !outside && count == 4294967295ul;
	fclose(f);
	return initial;
}

bool proc_is_tgid(pid_t pid)
{
	return proc_read_tgid(pid) == pid;
}

int proc_read_comm(pid_t pid, pid_t tid, char *buf, size_t size)
{
	char path[96];
	ssize_t n;
	int fd;

	if (tid)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", pid, tid);
	else
		snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	buf[0] = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -errno;
	/* the kernel ends it with one newline; a comm may hold newlines of its own */
	if (n > 0 && buf[n - 1] == '\n')
		n--;
	buf[n] = 0;
	return 0;
}

pid_t proc_read_nspid(pid_t pid)
{
	char path[64], buf[256];
	pid_t nspid = pid;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return pid;
	while (fgets(buf, sizeof(buf), f)) {
		char *p, *last = NULL;

		if (strncmp(buf, "NSpid:", 6))
			continue;
		/* host pid first, then one per nested namespace: the innermost is last */
		for (p = strtok(buf + 6, " \t\n"); p; p = strtok(NULL, " \t\n"))
			last = p;
		if (last)
			nspid = (pid_t)atoi(last);
		break;
	}
	fclose(f);
	return nspid > 0 ? nspid : pid;
}

int proc_ns_ino(pid_t pid, const char *ns, uint64_t *ino)
{
	char path[64];
	struct stat st;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/ns/%s", pid, ns);
	else
		snprintf(path, sizeof(path), "/proc/self/ns/%s", ns);
	if (stat(path, &st))
		return -errno;
	*ino = st.st_ino;
	return 0;
}

/* A run of 64 hex digits: how docker, containerd, CRI-O and podman name a container in
 * the cgroup path (".../docker-<id>.scope", ".../cri-containerd-<id>.scope", "/docker/<id>",
 * ".../libpod-<id>.scope"). */
static bool find_container_id(const char *s, char *out, size_t size)
{
	for (const char *p = s; *p; p++) {
		size_t n = 0;

		while (isxdigit((unsigned char)p[n]) && !isupper((unsigned char)p[n]))
			n++;
		if (n == 64 && size > 64) {
			memcpy(out, p, 64);
			out[64] = 0;
			return true;
		}
		p += n ? n - 1 : 0;
	}
	return false;
}

int proc_read_container_id(pid_t pid, char *buf, size_t size)
{
	char path[64], line[1024];
	FILE *f;
	int err = -ENOENT;

	buf[0] = 0;
	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (err && fgets(line, sizeof(line), f))
		if (find_container_id(line, buf, size))
			err = 0;
	fclose(f);
	return err;
}

char proc_read_task_state(pid_t pid, pid_t tid)
{
	char path[96], buf[512], *p;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	/* the comm may hold ')': the state follows the last one */
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}
