/* SPDX-License-Identifier: MIT */
/* /proc parsing: memory maps, names, liveness, and reading target memory. Paths of
 * mapped files are opened through /proc so containers and chroots resolve correctly. */
#ifndef PW_PROC_H
#define PW_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct proc_map {
	uint64_t start, end, offset;
	uint64_t inode;
	unsigned int dev_major, dev_minor;
	char perms[5];
	char *path; /* as the target sees it; NULL for anonymous mappings */
};

struct proc_maps {
	struct proc_map *maps;
	size_t n, cap;
};

/* Parse one line of /proc/PID/maps into *out (out->path malloc'ed, NULL unless the name is
 * a path). 0, -EINVAL when the line is not a mapping, or -ENOMEM. */
int proc_parse_maps_line(const char *line, struct proc_map *out);
/* Read /proc/PID/maps. 0 or a negative errno (-ESRCH when the process is gone). */
int proc_read_maps(pid_t pid, struct proc_maps *out);
void proc_maps_free(struct proc_maps *maps);

/* Open the file behind a mapping: /proc/PID/map_files/START-END, else
 * /proc/PID/root/PATH. Returns an fd or a negative errno. */
int proc_open_mapped_file(pid_t pid, const struct proc_map *map);

/* Read `len` bytes at `addr` of process `pid`. 0, or -EFAULT on a short read, or -errno. */
int proc_read_mem(pid_t pid, uint64_t addr, void *buf, size_t len);

/* Does the process exist (and is not a zombie)? */
bool proc_is_alive(pid_t pid);
/* Is `pid` a thread-group leader (a process id, not a thread id)? */
bool proc_is_tgid(pid_t pid);

/* The comm of PID (tid == 0) or of its thread TID, into buf (always terminated). 0 or -errno. */
int proc_read_comm(pid_t pid, pid_t tid, char *buf, size_t size);

#endif
