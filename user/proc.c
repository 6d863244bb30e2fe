// SPDX-License-Identifier: MIT
/* /proc parsing and process_vm_readv. Knows nothing about Python. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "proc.h"
#include "util.h"

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

int proc_open_mapped_file(pid_t pid, const struct proc_map *map)
{
	char path[4200];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, pid, map->start,
		 map->end);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	if (!map->path)
		return -ENOENT;
	/* a container's paths are relative to its root; a plain chroot's are shown as
	 * host paths (the kernel prints them relative to the reader's root) */
	snprintf(path, sizeof(path), "/proc/%d/root%s", pid, map->path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		fd = open(map->path, O_RDONLY | O_CLOEXEC);
	return fd >= 0 ? fd : -errno;
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

bool proc_is_alive(pid_t pid)
{
	char path[64], buf[512];
	FILE *f;
	bool alive = false;

	if (pid <= 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	if (fgets(buf, sizeof(buf), f)) {
		/* state follows the last ')' (comm may contain parentheses) */
		char *p = strrchr(buf, ')');

		alive = p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
	}
	fclose(f);
	return alive;
}

bool proc_is_tgid(pid_t pid)
{
	char path[64], buf[256];
	FILE *f;
	bool is_tgid = false;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (fgets(buf, sizeof(buf), f)) {
		if (!strncmp(buf, "Tgid:", 5)) {
			is_tgid = atoi(buf + 5) == pid;
			break;
		}
	}
	fclose(f);
	return is_tgid;
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
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}
