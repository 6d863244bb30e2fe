// SPDX-License-Identifier: MIT
/* Process discovery: which mapped ELF file holds _PyRuntime, its load bias, and whether the
 * interpreter is up. Version detection never looks at file names. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "elfinfo.h"
#include "proc.h"
#include "target.h"

/* Find the mapped ELF file that holds _PyRuntime. 0 and fills info, bias and path; -ENOEXEC when
 * none does. */
static int find_runtime(pid_t pid, const struct proc_maps *maps, struct elf_pyinfo *info,
			uint64_t *bias, char *path, size_t path_size)
{
	int last_err = -ENOEXEC;

	for (size_t i = 0; i < maps->n; i++) {
		const struct proc_map *m = &maps->maps[i];
		bool seen = false;
		int fd, err;

		/* the ELF header is in the mapping of file offset 0; look at each file once */
		if (!m->path || m->offset || !m->inode)
			continue;
		for (size_t j = 0; j < i && !seen; j++)
			seen = maps->maps[j].inode == m->inode && !maps->maps[j].offset &&
			       maps->maps[j].dev_major == m->dev_major &&
			       maps->maps[j].dev_minor == m->dev_minor;
		if (seen)
			continue;
		fd = proc_open_mapped_file(pid, m);
		if (fd < 0) {
			if (fd == -EACCES || fd == -EPERM)
				last_err = fd;
			continue;
		}
		err = elf_read_pyinfo(fd, info);
		close(fd);
		if (err || !info->runtime_vaddr)
			continue;
		*bias = info->is_dyn ? m->start - info->first_load_vaddr : 0;
		snprintf(path, path_size, "%s", m->path);
		return 0;
	}
	return last_err;
}

int target_open(pid_t pid, struct target *t, char *why, size_t why_size)
{
	struct proc_maps maps;
	struct elf_pyinfo info;
	uint64_t bias = 0, interp = 0;
	int err;

	memset(t, 0, sizeof(*t));
	why[0] = 0;
	t->pid = pid;
	if (!proc_is_alive(pid)) {
		snprintf(why, why_size, "no process with PID %d", pid);
		return -ESRCH;
	}
	if (!proc_is_tgid(pid)) {
		snprintf(why, why_size, "%d is a thread ID, not a process ID (use its process)", pid);
		return -ESRCH;
	}
	proc_read_comm(pid, 0, t->comm, sizeof(t->comm));
	err = proc_read_maps(pid, &maps);
	if (err) {
		snprintf(why, why_size, "cannot read /proc/%d/maps: %s", pid, strerror(-err));
		return err;
	}
	err = find_runtime(pid, &maps, &info, &bias, t->binary, sizeof(t->binary));
	proc_maps_free(&maps);
	if (err == -EACCES || err == -EPERM) {
		snprintf(why, why_size, "cannot open the binaries of PID %d: %s", pid, strerror(-err));
		return err;
	}
	if (err) {
		snprintf(why, why_size,
			 "PID %d (%s) is not a Python process (no _PyRuntime in its executable or "
			 "libraries)",
			 pid, t->comm);
		return -ENOEXEC;
	}
	t->code_type = info.code_type_vaddr ? info.code_type_vaddr + bias : 0;
	err = pyver_detect(pid, info.runtime_vaddr + bias, &info, &t->ver, why,
			   why_size);
	if (err)
		return err;
	/* an interpreter that is still starting has no interpreter state yet */
	err = proc_read_mem(pid, t->ver.cfg.runtime_addr + t->ver.cfg.off.runtime_interp_head,
			    &interp, sizeof(interp));
	if (err || !interp) {
		snprintf(why, why_size, "Python in PID %d is not initialized yet", pid);
		return -EAGAIN;
	}
	return 0;
}
