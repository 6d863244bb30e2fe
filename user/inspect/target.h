/* SPDX-License-Identifier: MIT */
/* A profiled process: find its interpreter (_PyRuntime in the executable or a mapped
 * libpython, through /proc/PID/maps and libelf), its version and offsets, and what names
 * it in outputs (comm, its own PID in a container, the container id). */
#ifndef PW_TARGET_H
#define PW_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "inspect/pyver.h"

struct target {
	pid_t pid;	      /* host PID */
	uint32_t id;	      /* one lifetime of this PID (pw_proc.target); set by discovery */
	uint64_t start_ticks; /* /proc/PID/stat start time when inspected */
	uint64_t seen_ns;     /* set by discovery: CLOCK_MONOTONIC before it was inspected (or
			       * its fork, when inherited); it shows no image older than this */
	pid_t nspid;	      /* PID in its own pid namespace (== pid when not in one) */
	bool own_pidns;	      /* in a pid namespace of its own (thread ids are translated) */
	bool initialized;     /* the interpreter had an interpreter state when inspected */
	char comm[32];
	char container[65]; /* container id from the cgroup path, "" when none */
	char service[129];  /* service name for fleet back ends (sanitized): the process's
			       * PYROSCOPE_SERVICE_NAME or OTEL_SERVICE_NAME, else its script or
			       * module, else its comm */
	bool service_asked; /* the service name came from the process's environment */
	char binary[256];   /* the file holding _PyRuntime, as the target sees it */
	uint64_t code_type; /* runtime address of PyCode_Type, 0 = unknown */
	uint64_t str_type;  /* of PyUnicode_Type and PyLong_Type (--async: task names) */
	uint64_t long_type;
	struct py_version ver;
};

/* What inspecting many processes shares: what each mapped file (by device, inode, size and
 * mtime) holds, so the libc of every process on a host is parsed once. Bounded. */
struct target_cache;

struct target_cache *target_cache__new(void);
void target_cache__free(struct target_cache *c);

/* Inspect process `pid` (cache may be NULL). 0 on success (the version is known; the
 * interpreter may still be starting: t->initialized says); otherwise a negative errno and a
 * sentence in `why`: -ESRCH no such process, -ENOEXEC not a Python process (yet: a
 * libpython may be mapped later), -ENOTSUP unsupported version or build, -EPERM/-EACCES no
 * permission. *maybe_later (may be NULL) is set on -ENOEXEC when the executable links a
 * libpython that is not mapped yet. */
int target_inspect(pid_t pid, struct target_cache *cache, struct target *t, bool *maybe_later,
		   char *why, size_t why_size);

/* The pw_proc config for the loader: the version's, with this target's id and flags. */
struct pw_proc target_config(const struct target *t);

#endif
