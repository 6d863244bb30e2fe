// SPDX-License-Identifier: MIT
/* Privilege and kernel-feature checks with messages that say what to do. The least
 * privilege is CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE (CAP_SYS_ADMIN stands in for the first
 * two on kernels before 5.8); CAP_DAC_READ_SEARCH is needed only for targets whose binaries
 * sit under a directory pywalk's user cannot search, and CAP_SYS_ADMIN lets mapped files be
 * opened through /proc/PID/map_files (without it they are opened by path, verified). */
#include <errno.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "engine/preflight.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

static int has_cap(const struct __user_cap_data_struct data[2], int cap)
{
	return !!(data[cap / 32].effective & (1u << (cap % 32)));
}

/* The capabilities pywalk needs, what each is for, and what stands in for it. */
static const struct need {
	int cap, or_cap; /* or_cap: one that also grants it (-1: none) */
	const char *name, *what;
} needs[] = {
	{ CAP_BPF, CAP_SYS_ADMIN, "CAP_BPF", "to load its BPF programs and maps" },
	{ CAP_PERFMON, CAP_SYS_ADMIN, "CAP_PERFMON",
	  "to open perf events on every CPU and read user memory from BPF" },
	{ CAP_SYS_PTRACE, -1, "CAP_SYS_PTRACE",
	  "to read the memory and /proc files of processes of other users" },
};

int preflight_check(char *why, size_t why_size)
{
	const char *btf =
		getenv("PYWALK_BTF_PATH") ? getenv("PYWALK_BTF_PATH") : "/sys/kernel/btf/vmlinux";
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = { 0 };

	/* root is not enough by itself: a container or systemd may have dropped some */
	if (syscall(SYS_capget, &hdr, data)) {
		snprintf(why, why_size, "cannot read capabilities (%s); run as root",
			 strerror(errno));
		return -EPERM;
	}
	for (size_t i = 0; i < sizeof(needs) / sizeof(needs[0]); i++) {
		const struct need *n = &needs[i];

		if (has_cap(data, n->cap) || (n->or_cap >= 0 && has_cap(data, n->or_cap)))
			continue;
		snprintf(why, why_size,
			 "permission denied: missing %s (needed %s); run as root, or grant "
			 "CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE (e.g. sudo pywalk ...)",
			 n->name, n->what);
		return -EPERM;
	}
	if (access(btf, R_OK)) {
		snprintf(why, why_size,
			 "this kernel has no BTF (%s missing): pywalk needs a kernel built with "
			 "CONFIG_DEBUG_INFO_BTF=y (Linux 5.17+)",
			 btf);
		return -ENOTSUP;
	}
	return 0;
}
