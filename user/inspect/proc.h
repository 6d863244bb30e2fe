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

/* Open the file behind a mapping for reading: /proc/PID/map_files/START-END, else the
 * path of the maps line resolved in the target's root and then in ours without following a
 * symlink, accepted only when it is a regular file with the mapping's device and inode.
 * Never blocks and never opens a special file. Returns an fd or a negative errno (-ESTALE:
 * the path names another file now). */
int proc_open_mapped_file(pid_t pid, const struct proc_map *map);
/* The same, as an O_PATH fd (fstat it; nothing is opened for I/O). */
int proc_open_mapped_path(pid_t pid, const struct proc_map *map);
/* A read-only fd for the file an O_PATH fd refers to. fd or -errno. */
int proc_reopen_for_reading(int path_fd);

/* Read `len` bytes at `addr` of process `pid`. 0, or -EFAULT on a short read, or -errno. */
int proc_read_mem(pid_t pid, uint64_t addr, void *buf, size_t len);

/* Does the process exist (and is not a zombie)? */
bool proc_is_alive(pid_t pid);
/* Start time of the process (clock ticks after boot, /proc/PID/stat field 22): with the PID,
 * what tells one lifetime from the next. 0 or a negative errno (-ESRCH: gone). */
int proc_read_start_time(pid_t pid, uint64_t *ticks);
/* PID of `pid` in its own (innermost) pid namespace; `pid` itself when not nested. */
pid_t proc_read_nspid(pid_t pid);
/* Inode of namespace `ns` ("pid", "mnt") of process `pid` (0: pywalk's own). 0 or -errno. */
int proc_ns_ino(pid_t pid, const char *ns, uint64_t *ino);
/* Container id (64 hex digits) from the process's cgroup path, into buf (>= 65 bytes).
 * 0, -ENOENT when it has none, or -errno. */
int proc_read_container_id(pid_t pid, char *buf, size_t size);

/* The process (thread group) that thread `pid` belongs to, or -errno. */
pid_t proc_read_tgid(pid_t pid);
/* Does pywalk run in the initial user namespace (not in a container's or unshare's)? */
bool proc_self_in_initial_userns(void);
/* Is `pid` a thread-group leader (a process id, not a thread id)? */
bool proc_is_tgid(pid_t pid);

/* The comm of PID (tid == 0) or of its thread TID, into buf (always terminated). 0 or -errno. */
int proc_read_comm(pid_t pid, pid_t tid, char *buf, size_t size);
/* The state letter (R, S, D, T, ...) of thread `tid` of `pid`, from its stat; 0 when it
 * cannot be read. */
char proc_read_task_state(pid_t pid, pid_t tid);

#endif
