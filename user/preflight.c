// SPDX-License-Identifier: MIT
/* Privilege and kernel-feature checks with messages that say what to do. */
#include <errno.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preflight.h"

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

int preflight_check(char *why, size_t why_size)
{
	const char *btf = getenv("PYWALK_BTF_PATH") ? getenv("PYWALK_BTF_PATH") : "/sys/kernel/btf/vmlinux";

	if (geteuid() != 0) {
		struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
		struct __user_cap_data_struct data[2] = { 0 };
		int sys_admin, ok;

		if (syscall(SYS_capget, &hdr, data)) {
			snprintf(why, why_size, "cannot read capabilities; run as root");
			return -EPERM;
		}
		sys_admin = has_cap(data, CAP_SYS_ADMIN);
		ok = (sys_admin || (has_cap(data, CAP_BPF) && has_cap(data, CAP_PERFMON))) &&
		     has_cap(data, CAP_SYS_PTRACE);
		if (!ok) {
			snprintf(why, why_size,
				 "permission denied: run as root, or grant CAP_BPF, CAP_PERFMON and "
				 "CAP_SYS_PTRACE (e.g. sudo pywalk ...)");
			return -EPERM;
		}
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
