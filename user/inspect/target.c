// SPDX-License-Identifier: MIT
/* Process inspection: which mapped ELF file holds _PyRuntime, its load bias, the version,
 * and the process's names (comm, namespace PID, container). Version detection never looks
 * at file names. Mapped files are opened only through proc_open_mapped_path (the mapping's
 * own file, proven by device and inode), and what each file holds is cached. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "inspect/elfinfo.h"
#include "lib/escape.h"
#include "lib/intern.h"
#include "inspect/proc.h"
#include "inspect/target.h"
#include "lib/util.h"

/* Files remembered; past this the cache starts over (a host has far fewer distinct ELF
 * files mapped, so this only bounds a hostile stream of new files). */
#define CACHE_MAX_FILES 8192

struct file_key {
	uint64_t dev, ino, size;
	int64_t mtime_ns;
};

struct file_entry {
	struct file_key key;
	int err; /* elf_read_pyinfo's result */
	struct elf_pyinfo info;
};

struct target_cache {
	struct intern files; /* struct file_entry, by struct file_key */
};

static bool file_eq(const void *item, const void *key)
{
	return !memcmp(&((const struct file_entry *)item)->key, key, sizeof(struct file_key));
}

struct target_cache *target_cache__new(void)
{
	struct target_cache *c = calloc(1, sizeof(*c));

	if (c)
		c->files = (struct intern)INTERN_INIT(struct file_entry, file_eq);
	return c;
}

void target_cache__free(struct target_cache *c)
{
	if (!c)
		return;
	intern_free(&c->files);
	free(c);
}

/* What the file open (O_PATH) on `pfd` holds: from the cache, else parsed. */
static int file_pyinfo(struct target_cache *c, int pfd, struct elf_pyinfo *info)
{
	struct file_key k;
	struct stat st;
	uint64_t hash;
	int64_t id;
	int fd, err;

	if (fstat(pfd, &st))
		return -errno;
	memset(&k, 0, sizeof(k));
	k = (struct file_key){ .dev = st.st_dev,
			       .ino = st.st_ino,
			       .size = (uint64_t)st.st_size,
			       .mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 +
					   st.st_mtim.tv_nsec };
	hash = hash_bytes(&k, sizeof(k), 0);
	id = c ? intern_find(&c->files, hash, &k) : -1;
	if (id >= 0) {
		const struct file_entry *e = intern_at(&c->files, (size_t)id);

		*info = e->info;
		return e->err;
	}
	fd = proc_reopen_for_reading(pfd);
	if (fd < 0)
		return fd;
	err = elf_read_pyinfo(fd, info);
	close(fd);
	if (!c || err == -ENOMEM)
		return err;
	if (intern_count(&c->files) >= CACHE_MAX_FILES)
		intern_clear(&c->files);
	/* failing to remember is not failing to inspect */
	intern_add(&c->files, hash, &(struct file_entry){ .key = k, .err = err, .info = *info });
	return err;
}

/* Is `addr` mapped from the file of mapping `file`, showing the byte at file `offset`? */
static bool maps_file_at(const struct proc_maps *maps, const struct proc_map *file, uint64_t addr,
			 uint64_t offset)
{
	for (size_t i = 0; i < maps->n; i++) {
		const struct proc_map *m = &maps->maps[i];

		if (addr >= m->start && addr < m->end)
			return m->inode == file->inode && m->dev_major == file->dev_major &&
			       m->dev_minor == file->dev_minor &&
			       m->offset + (addr - m->start) == offset;
	}
	return false;
}

/* Find the mapped ELF file that holds _PyRuntime. 0 and fills info, bias and path; -ENOEXEC
 * when none does (*maybe_later when the executable links a libpython not mapped yet, or
 * the file holding _PyRuntime is not all mapped yet). */
static int find_runtime(pid_t pid, struct target_cache *cache, const struct proc_maps *maps,
			struct elf_pyinfo *info, uint64_t *bias, char *path, size_t path_size,
			bool *maybe_later)
{
	int last_err = -ENOEXEC;

	for (size_t i = 0; i < maps->n; i++) {
		const struct proc_map *m = &maps->maps[i];
		bool seen = false;
		int pfd, err;

		/* the ELF header is in the mapping of file offset 0; look at each file once */
		if (!m->path || m->offset || !m->inode)
			continue;
		for (size_t j = 0; j < i && !seen; j++)
			seen = maps->maps[j].inode == m->inode && !maps->maps[j].offset &&
			       maps->maps[j].dev_major == m->dev_major &&
			       maps->maps[j].dev_minor == m->dev_minor;
		if (seen)
			continue;
		pfd = proc_open_mapped_path(pid, m);
		if (pfd < 0) {
			if (pfd == -EACCES || pfd == -EPERM)
				last_err = pfd;
			continue;
		}
		err = file_pyinfo(cache, pfd, info);
		close(pfd);
		if (err)
			continue;
		if (info->needs_libpython)
			*maybe_later = true;
		if (!info->runtime_vaddr)
			continue;
		*bias = info->is_dyn ? m->start - info->first_load_vaddr : 0;
		/* The dynamic loader maps a library in steps: all of it from file offset 0
		 * first, then each segment over that at its own offset. Until _PyRuntime's
		 * segment is in place its address shows other bytes of the file, and a verdict
		 * read there ("3.13 without debug offsets: not supported") would be final:
		 * come back when the loader is done. */
		if (info->runtime_in_file &&
		    !maps_file_at(maps, m, *bias + info->runtime_vaddr, info->runtime_offset)) {
			*maybe_later = true;
			continue;
		}
		snprintf(path, path_size, "%s", m->path);
		return 0;
	}
	return last_err;
}

/* Bytes of /proc/PID/environ and cmdline looked at: both are the target's to make huge. */
#define ENV_READ_MAX (256 << 10)
#define CMDLINE_READ_MAX 4096

/* Read up to `max` bytes of /proc/PID/<what> into a malloc'ed, NUL-terminated buffer. */
static char *read_proc_file(pid_t pid, const char *what, size_t max, size_t *len)
{
	char path[64], *buf = malloc(max + 1);
	size_t n = 0;
	int fd;

	*len = 0;
	if (!buf)
		return NULL;
	snprintf(path, sizeof(path), "/proc/%d/%s", pid, what);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		free(buf);
		return NULL;
	}
	while (n < max) {
		ssize_t r = read(fd, buf + n, max - n);

		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = 0;
	*len = n;
	return buf;
}

/* The value of `name` in a NUL-separated environment block, or NULL. */
static const char *env_get(const char *env, size_t len, const char *name)
{
	size_t nlen = strlen(name);

	for (size_t i = 0; i < len; i += strlen(env + i) + 1)
		if (!strncmp(env + i, name, nlen) && env[i + nlen] == '=' && env[i + nlen + 1])
			return env + i + nlen + 1;
	return NULL;
}

/* What to call the process in a fleet back end: what it asks to be called, else the
 * script or module it runs (python [options] SCRIPT | -m MODULE), else its comm. */
static void read_service(pid_t pid, struct target *t)
{
	size_t len;
	char *env = read_proc_file(pid, "environ", ENV_READ_MAX, &len), *cmd;
	const char *name = NULL, *v;

	if (env && ((v = env_get(env, len, "PYROSCOPE_SERVICE_NAME")) ||
		    (v = env_get(env, len, "OTEL_SERVICE_NAME"))))
		name = v;
	if (name) {
		escape_label(name, t->service, sizeof(t->service));
		t->service_asked = true;
		free(env);
		return;
	}
	free(env);
	cmd = read_proc_file(pid, "cmdline", CMDLINE_READ_MAX, &len);
	for (size_t i = cmd ? strlen(cmd) + 1 : len; cmd && i < len; i += strlen(cmd + i) + 1) {
		const char *arg = cmd + i;

		if (!strcmp(arg, "-m") && i + 3 < len) {
			name = arg + 3;
			break;
		}
		if (!strcmp(arg, "-c"))
			break;
		/* options that take a value as the next argument */
		if (!strcmp(arg, "-X") || !strcmp(arg, "-W")) {
			i += strlen(arg) + 1;
			continue;
		}
		if (arg[0] != '-') {
			const char *base = strrchr(arg, '/');

			name = base ? base + 1 : arg;
			break;
		}
	}
	escape_label(name && name[0] ? name : t->comm, t->service, sizeof(t->service));
	if (name) {
		char *dot = strstr(t->service, ".py");

		if (dot && !dot[3] && dot != t->service)
			*dot = 0;
	}
	free(cmd);
}

/* Where the process lives: its PID as it sees it, its pid namespace, its container. */
static void read_identity(pid_t pid, struct target *t)
{
	uint64_t mine = 0, theirs = 0;

	t->nspid = proc_read_nspid(pid);
	t->own_pidns = !proc_ns_ino(0, "pid", &mine) && !proc_ns_ino(pid, "pid", &theirs) &&
		       mine != theirs;
	if (proc_read_container_id(pid, t->container, sizeof(t->container)))
		t->container[0] = 0;
	read_service(pid, t);
}

int target_inspect(pid_t pid, struct target_cache *cache, struct target *t, bool *maybe_later,
		   char *why, size_t why_size)
{
	struct proc_maps maps;
	struct elf_pyinfo info;
	uint64_t bias = 0, interp = 0;
	bool later = false;
	int err;

	memset(t, 0, sizeof(*t));
	why[0] = 0;
	if (maybe_later)
		*maybe_later = false;
	/* before anything is read: all that follows describes the program running then or
	 * a later one, which an exec record with an earlier time can tell */
	t->seen_ns = now_ns();
	t->pid = pid;
	err = proc_read_start_time(pid, &t->start_ticks);
	if (err || !proc_is_alive(pid)) {
		snprintf(why, why_size, "no process with PID %d", pid);
		return -ESRCH;
	}
	if (!proc_is_tgid(pid)) {
		pid_t tgid = proc_read_tgid(pid);

		if (tgid > 0)
			snprintf(why, why_size,
				 "%d is a thread of process %d, not a process: give -p %d", pid,
				 tgid, tgid);
		else
			snprintf(why, why_size,
				 "%d is a thread ID, not a process ID (use its process)", pid);
		return -ESRCH;
	}
	proc_read_comm(pid, 0, t->comm, sizeof(t->comm));
	err = proc_read_maps(pid, &maps);
	if (err) {
		/* pywalk holds CAP_SYS_PTRACE by now (preflight), so this process is beyond
		 * what that capability reaches */
		if ((err == -EACCES || err == -EPERM) && !proc_self_in_initial_userns())
			snprintf(
				why, why_size,
				"cannot read /proc/%d/maps: %s (pywalk runs in a user namespace, e.g. "
				"a container's, and the process belongs to an outer one: run pywalk "
				"where the process is, e.g. on the host)",
				pid, strerror(-err));
		else if (err == -EACCES || err == -EPERM)
			snprintf(
				why, why_size,
				"cannot read /proc/%d/maps: %s (the process is more privileged than "
				"pywalk, or a security module forbids it: run pywalk as full root, "
				"check kernel.yama.ptrace_scope)",
				pid, strerror(-err));
		else
			snprintf(why, why_size, "cannot read /proc/%d/maps: %s", pid,
				 strerror(-err));
		return err;
	}
	err = find_runtime(pid, cache, &maps, &info, &bias, t->binary, sizeof(t->binary), &later);
	proc_maps_free(&maps);
	if (err == -EACCES || err == -EPERM) {
		snprintf(why, why_size,
			 "cannot open the binaries of PID %d: %s (a binary under a directory only "
			 "root can search needs CAP_DAC_READ_SEARCH)",
			 pid, strerror(-err));
		return err;
	}
	if (err) {
		if (maybe_later)
			*maybe_later = later;
		snprintf(why, why_size,
			 "PID %d (%s) is not a Python process (no _PyRuntime in its executable or "
			 "libraries)",
			 pid, t->comm);
		return -ENOEXEC;
	}
	t->code_type = info.code_type_vaddr ? info.code_type_vaddr + bias : 0;
	t->str_type = info.str_type_vaddr ? info.str_type_vaddr + bias : 0;
	t->long_type = info.long_type_vaddr ? info.long_type_vaddr + bias : 0;
	err = pyver_detect(pid, info.runtime_vaddr + bias, &info, &t->ver, why, why_size);
	if (err)
		return err;
	/* an interpreter that is still starting has no interpreter state yet; it can be
	 * sampled already (its threads count as "no thread state" until they have one) */
	t->initialized =
		!proc_read_mem(pid, t->ver.cfg.runtime_addr + t->ver.cfg.off.runtime_interp_head,
			       &interp, sizeof(interp)) &&
		interp;
	read_identity(pid, t);
	return 0;
}

struct pw_proc target_config(const struct target *t)
{
	struct pw_proc cfg = t->ver.cfg;

	cfg.target = t->id;
	cfg.flags = t->own_pidns && cfg.thread_match == PW_MATCH_NATIVE_TID ? PW_PROCF_NSPID : 0;
	return cfg;
}
