/* SPDX-License-Identifier: MIT */
/* A profiled process: find its interpreter (_PyRuntime in the executable or a mapped
 * libpython, through /proc/PID/maps and libelf), its version and offsets. */
#ifndef PW_TARGET_H
#define PW_TARGET_H

#include <stdint.h>
#include <sys/types.h>

#include "pyver.h"

struct target {
	pid_t pid;
	char comm[32];
	char binary[256];     /* the file holding _PyRuntime, as the target sees it */
	uint64_t code_type;   /* runtime address of PyCode_Type, 0 = unknown */
	struct py_version ver;
};

/* Inspect process `pid`. 0 on success; otherwise a negative errno and a sentence in `why`:
 * -ESRCH no such process, -ENOEXEC not a Python process, -EAGAIN Python not initialized yet,
 * -ENOTSUP unsupported version or build, -EPERM/-EACCES no permission. */
int target_open(pid_t pid, struct target *t, char *why, size_t why_size);

#endif
