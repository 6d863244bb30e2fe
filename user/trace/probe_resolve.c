// SPDX-License-Identifier: MIT
/* Probes to sites, with every check that can fail done here, before the kernel is touched:
 * a run either attaches all of its probes or none. Binaries a target maps are opened only
 * through the proof helpers of proc.c (its maps paths are the target's to choose). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "trace/elfprobe.h"
#include "lib/log.h"
#include "trace/probe_resolve.h"
#include "inspect/proc.h"
#include "trace/syscalls.h"
#include "trace/tracefs.h"
#include "lib/util.h"

#define KPROBE_PMU "/sys/bus/event_source/devices/kprobe"

static int fail(char *why, size_t why_size, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int fail(char *why, size_t why_size, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, why_size, fmt, ap);
	va_end(ap);
	return err;
}

int probe_set_add(struct probe_set *set, const char *text, char *why, size_t why_size)
{
	struct trace_probe *tp;
	int err;

	if (set->nprobes >= ARRAY_SIZE(set->probes))
		return fail(why, why_size, -E2BIG, "too many probes (at most %zu in one run)",
			    ARRAY_SIZE(set->probes));
	tp = &set->probes[set->nprobes];
	err = probe_parse(text, &tp->spec, why, why_size);
	if (err)
		return err;
	tp->id = (uint32_t)++set->nprobes;
	return 0;
}

int probe_set_check_latency(const struct probe_set *set, char *why, size_t why_size)
{
	for (size_t i = 0; i < set->nprobes; i++) {
		const struct probe_spec *sp = &set->probes[i].spec;

		if (sp->kind == PROBE_UPROBE && sp->offset)
			return fail(why, why_size, -EINVAL,
				    "'%s': --latency pairs a function's entry with its return; "
				    "probe the function itself (no +OFFSET)",
				    sp->text);
		if (sp->kind != PROBE_UPROBE && !(sp->kind == PROBE_SYSCALL && !sp->exit))
			return fail(why, why_size, -EINVAL,
				    "'%s': --latency pairs uprobe: probes and "
				    "syscalls:sys_enter_ tracepoints with their returns; this "
				    "probe has none",
				    sp->text);
	}
	return 0;
}

static struct probe_site *new_site(struct probe_set *set, const struct trace_probe *tp)
{
	struct probe_site *ps;

	if (grow_array((void **)&set->sites, &set->cap, set->nsites + 1, sizeof(*set->sites)))
		return NULL;
	ps = &set->sites[set->nsites++];
	memset(ps, 0, sizeof(*ps));
	ps->probe = tp->id;
	ps->fd = -1;
	ps->nr = -1;
	return ps;
}

/* ---- tracepoints and syscalls ------------------------------------------------------------ */

struct collect {
	struct probe_set *set;
	struct trace_probe *tp;
	int err;
};

static void add_tracepoint(void *ctx, const char *cat, const char *name)
{
	struct collect *c = ctx;
	struct probe_site *ps = c->err ? NULL : new_site(c->set, c->tp);

	if (!ps) {
		c->err = -ENOMEM;
		return;
	}
	snprintf(ps->cat, sizeof(ps->cat), "%s", cat);
	snprintf(ps->name, sizeof(ps->name), "%s", name);
	snprintf(ps->label, sizeof(ps->label), "tracepoint:%s:%s", cat, name);
}

static int resolve_tracepoint(struct probe_set *set, struct trace_probe *tp, char *why,
			      size_t why_size)
{
	struct collect c = { set, tp, 0 };
	bool mounted;
	int n, err;

	err = tracefs_ensure(&mounted, why, why_size);
	if (err)
		return fail(why, why_size, err, "'%s': %s", tp->spec.text, strerror(-err));
	if (mounted) {
		set->mounted_tracefs = true;
		pw_debug(
			"tracefs was not mounted: mounted it at %s, in a mount namespace of pywalk's own\n",
			TRACEFS_DIR);
	}
	n = tracefs_match(tp->spec.where, tp->spec.what, add_tracepoint, &c);
	if (n < 0 || c.err)
		return fail(why, why_size, n < 0 ? n : c.err, "'%s': cannot list tracepoints: %s",
			    tp->spec.text, strerror(n < 0 ? -n : -c.err));
	if (!n)
		return fail(why, why_size, -ENOENT,
			    "'%s': no such tracepoint (list them with pywalk trace -l "
			    "'tracepoint:%s:*')",
			    tp->spec.text, tp->spec.where);
	return 0;
}

static void add_syscall(void *ctx, const char *name, int nr)
{
	struct collect *c = ctx;
	struct probe_site *ps;

	if (c->err)
		return;
	if (nr < 0 || nr >= 1024) {
		c->err = -ERANGE;
		return;
	}
	/* one enter and one exit probe per syscall: the map holds one of each */
	for (size_t i = 0; i < c->set->nsites; i++) {
		const struct probe_site *o = &c->set->sites[i];
		const struct trace_probe *op = &c->set->probes[o->probe - 1];

		if (o->nr == nr && op->spec.kind == PROBE_SYSCALL &&
		    op->spec.exit == c->tp->spec.exit) {
			c->err = -EEXIST;
			snprintf(c->tp->spec.name, sizeof(c->tp->spec.name), "%s", name);
			return;
		}
	}
	ps = new_site(c->set, c->tp);
	if (!ps) {
		c->err = -ENOMEM;
		return;
	}
	ps->nr = nr;
	ps->site = (uint32_t)nr + 1;
	snprintf(ps->label, sizeof(ps->label), "tracepoint:syscalls:sys_%s_%s",
		 c->tp->spec.exit ? "exit" : "enter", name);
}

static int resolve_syscall(struct probe_set *set, struct trace_probe *tp, char *why,
			   size_t why_size)
{
	struct collect c = { set, tp, 0 };
	size_t n = syscalls_match(tp->spec.what, add_syscall, &c);

	if (c.err == -EEXIST)
		return fail(why, why_size, -EINVAL,
			    "'%s': syscall %s is in another probe of this run already (give each "
			    "syscall to one probe)",
			    tp->spec.text, tp->spec.name);
	if (c.err)
		return fail(why, why_size, c.err, "'%s': %s", tp->spec.text, strerror(-c.err));
	if (!n)
		return fail(why, why_size, -ENOENT,
			    "'%s': no syscall is named '%s' (list them with pywalk trace -l "
			    "'tracepoint:syscalls:*')",
			    tp->spec.text, tp->spec.what);
	return 0;
}

/* ---- binaries: uprobes and USDT -------------------------------------------------------- */

/* A library name matches a file "NAME", "NAME.so...", "NAME-2.31.so": libc is libc.so.6. */
static bool lib_matches(const char *lib, const char *path)
{
	const char *base = strrchr(path, '/');
	size_t n = strlen(lib);

	base = base ? base + 1 : path;
	return !strncmp(base, lib, n) && (!base[n] || base[n] == '.' || base[n] == '-');
}

static bool same_file_seen(const struct probe_set *set, const struct trace_probe *tp,
			   const struct stat *st)
{
	for (size_t i = tp->first; i < set->nsites; i++) {
		struct stat o;

		if (set->sites[i].fd >= 0 && !fstat(set->sites[i].fd, &o) &&
		    o.st_dev == st->st_dev && o.st_ino == st->st_ino)
			return true;
	}
	return false;
}

/* A site for the binary open on `fd` (O_PATH; taken over), unless the probe has that file
 * already. */
static int add_binary(struct probe_set *set, struct trace_probe *tp, int fd, const char *shown)
{
	struct probe_site *ps;
	struct stat st;

	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || same_file_seen(set, tp, &st)) {
		close(fd);
		return 0;
	}
	ps = new_site(set, tp);
	if (!ps) {
		close(fd);
		return -ENOMEM;
	}
	ps->fd = fd;
	snprintf(ps->path, sizeof(ps->path), "/proc/self/fd/%d", fd);
	snprintf(ps->shown, sizeof(ps->shown), "%s", shown);
	return 0;
}

/* The binary in the maps of target `pid`: a mapping of that path, or of that library. */
static int binary_in_target(struct probe_set *set, struct trace_probe *tp, pid_t pid)
{
	const char *where = tp->spec.where;
	struct proc_maps maps = { 0 };
	int err = proc_read_maps(pid, &maps), found = 0;

	for (size_t i = 0; !err && i < maps.n; i++) {
		const struct proc_map *m = &maps.maps[i];
		int fd;

		if (!m->path ||
		    !(strchr(where, '/') ? !strcmp(m->path, where) : lib_matches(where, m->path)))
			continue;
		fd = proc_open_mapped_path(pid, m);
		if (fd < 0)
			continue;
		err = add_binary(set, tp, fd, m->path);
		found = 1;
	}
	proc_maps_free(&maps);
	return err ? err : found;
}

static const char *const lib_dirs[] = {
	"/lib/x86_64-linux-gnu",
	"/usr/lib/x86_64-linux-gnu",
	"/lib/aarch64-linux-gnu",
	"/usr/lib/aarch64-linux-gnu",
	"/lib64",
	"/usr/lib64",
	"/lib",
	"/usr/lib",
	"/usr/local/lib",
};

/* The binary on this system: the path given, or a library in the usual directories. The
 * name is the user's, not a target's: opening it is what they asked for. */
static int binary_here(struct probe_set *set, struct trace_probe *tp)
{
	const char *where = tp->spec.where;
	char path[PATH_MAX];
	int fd;

	if (strchr(where, '/')) {
		fd = open(where, O_PATH | O_CLOEXEC);
		return fd < 0 ? 0 : (add_binary(set, tp, fd, where) ?: 1);
	}
	for (size_t i = 0; i < ARRAY_SIZE(lib_dirs); i++) {
		DIR *d = opendir(lib_dirs[i]);
		struct dirent *de;
		int found = 0;

		if (!d)
			continue;
		while (!found && (de = readdir(d))) {
			if (!lib_matches(where, de->d_name) || !strstr(de->d_name, ".so"))
				continue;
			snprintf(path, sizeof(path), "%s/%s", lib_dirs[i], de->d_name);
			fd = open(path, O_PATH | O_CLOEXEC);
			if (fd >= 0 && !add_binary(set, tp, fd, path) && set->nsites > tp->first)
				found = 1;
		}
		closedir(d);
		if (found)
			return 1;
	}
	return 0;
}

struct usdt_find {
	const char *want; /* "provider:name" */
	bool found;
};

static void usdt_seen(void *ctx, const char *probe)
{
	struct usdt_find *f = ctx;

	if (!strcmp(probe, f->want))
		f->found = true;
}

/* Check the probe's function or note in every binary found for it. */
static int check_binaries(struct probe_set *set, struct trace_probe *tp, char *why, size_t why_size)
{
	const struct probe_spec *sp = &tp->spec;

	for (size_t i = tp->first; i < set->nsites; i++) {
		struct probe_site *ps = &set->sites[i];
		int fd = proc_reopen_for_reading(ps->fd), err;
		char want[2 * PROBE_PART_MAX + 2];
		struct usdt_find f = { want, false };
		uint64_t off = 0;

		if (fd < 0)
			return fail(why, why_size, fd, "'%s': cannot read %s: %s", sp->text,
				    ps->shown, strerror(-fd));
		if (sp->kind == PROBE_USDT) {
			snprintf(want, sizeof(want), "%s:%s", sp->what, sp->name);
			err = elfprobe_list_usdt(fd, usdt_seen, &f);
			close(fd);
			if (!err && !f.found)
				return fail(why, why_size, -ENOENT,
					    "'%s': %s has no USDT probe %s (list them with pywalk "
					    "trace -l 'usdt:%s:*')",
					    sp->text, ps->shown, want, sp->where);
			snprintf(ps->cat, sizeof(ps->cat), "%s", sp->what);
			snprintf(ps->name, sizeof(ps->name), "%s", sp->name);
		} else {
			err = elfprobe_func_offset(fd, sp->what, &off);
			close(fd);
			if (err == -ENOENT)
				return fail(why, why_size, err,
					    "'%s': %s has no function '%s' (list them with pywalk "
					    "trace -l 'uprobe:%s:*'%s)",
					    sp->text, ps->shown, sp->what, sp->where,
					    strchr(sp->where, '/') ? "" : " -p PID");
			ps->offset = off + sp->offset;
		}
		if (err == -ENOEXEC)
			return fail(why, why_size, err, "'%s': %s is not an ELF file", sp->text,
				    ps->shown);
		if (err)
			return fail(why, why_size, err, "'%s': cannot read %s: %s", sp->text,
				    ps->shown, strerror(-err));
		snprintf(ps->label, sizeof(ps->label), "%s", sp->text);
		if (set->nsites - tp->first > 1)
			ps->site = (uint32_t)(i - tp->first + 1);
	}
	return 0;
}

int probe_set_find_binaries(struct probe_set *set, struct trace_probe *tp,
			    const struct cli_sampling *s, char *why, size_t why_size)
{
	const char *where = tp->spec.where;
	int found = 0, r;

	for (size_t i = 0; i < s->npids; i++) {
		r = binary_in_target(set, tp, s->pids[i]);
		if (r < 0)
			return fail(why, why_size, r, "'%s': %s", tp->spec.text, strerror(-r));
		found |= r;
	}
	/* a path no target maps yet (a library loaded later) is probed where it is here */
	if (!found && (!s->npids || strchr(where, '/'))) {
		r = binary_here(set, tp);
		if (r < 0)
			return fail(why, why_size, r, "'%s': %s", tp->spec.text, strerror(-r));
		found = r;
	}
	if (!found) {
		if (s->npids)
			return fail(why, why_size, -ENOENT,
				    "'%s': no library '%s' in the maps of PID %d%s (is it loaded? "
				    "give its path)",
				    tp->spec.text, where, s->pids[0],
				    s->npids > 1 ? " or the other PIDs" : "");
		return fail(why, why_size, -ENOENT,
			    strchr(where, '/') ? "'%s': no file %s (give the binary's path)"
					       : "'%s': no library '%s' found on this system "
						 "(give its path)",
			    tp->spec.text, where);
	}
	tp->nsites = set->nsites - tp->first;
	return 0;
}

static int resolve_binary(struct probe_set *set, struct trace_probe *tp,
			  const struct cli_sampling *s, char *why, size_t why_size)
{
	int err = probe_set_find_binaries(set, tp, s, why, why_size);

	return err ? err : check_binaries(set, tp, why, why_size);
}

/* ---- kernel features ------------------------------------------------------------------- */

int probe_kprobes_supported(const char *what, char *why, size_t why_size)
{
	/* kprobes attach through the kprobe PMU: without it (CONFIG_KPROBES off) the kernel
	 * has no kprobes at all */
	if (access(KPROBE_PMU, F_OK))
		return fail(why, why_size, -EOPNOTSUPP,
			    "'%s': kprobes are not supported by this kernel (%s is absent: "
			    "built without CONFIG_KPROBES); use a tracepoint: instead",
			    what, KPROBE_PMU);
	return 0;
}

static int resolve_kprobe(struct probe_set *set, struct trace_probe *tp, char *why, size_t why_size)
{
	struct probe_site *ps;

	int err = probe_kprobes_supported(tp->spec.text, why, why_size);

	if (err)
		return err;
	ps = new_site(set, tp);
	if (!ps)
		return -ENOMEM;
	snprintf(ps->name, sizeof(ps->name), "%s", tp->spec.what);
	snprintf(ps->label, sizeof(ps->label), "%s", tp->spec.text);
	ps->offset = tp->spec.offset;
	return 0;
}

static int resolve_perf(struct probe_set *set, struct trace_probe *tp, char *why, size_t why_size)
{
	struct perf_event_attr attr = { .size = sizeof(attr),
					.type = tp->spec.perf_type,
					.config = tp->spec.perf_config,
					.sample_period = tp->spec.period,
					.freq = tp->spec.freq,
					.disabled = 1 };
	struct probe_site *ps;
	int fd = (int)syscall(__NR_perf_event_open, &attr, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);

	if (fd < 0) {
		int err = -errno;

		if (err == -ENOENT || err == -EOPNOTSUPP || err == -ENODEV)
			return fail(why, why_size, err,
				    "'%s': this machine has no such perf event (a VM without a "
				    "hardware PMU has no hardware: events; try software:cpu-clock)",
				    tp->spec.text);
		return fail(why, why_size, err, "'%s': cannot open the perf event: %s",
			    tp->spec.text, strerror(-err));
	}
	close(fd);
	ps = new_site(set, tp);
	if (!ps)
		return -ENOMEM;
	snprintf(ps->label, sizeof(ps->label), "%s", tp->spec.text);
	return 0;
}

int probe_set_resolve(struct probe_set *set, const struct cli_sampling *s, char *why,
		      size_t why_size)
{
	for (size_t i = 0; i < set->nprobes; i++) {
		struct trace_probe *tp = &set->probes[i];
		int err = 0;

		tp->first = set->nsites;
		switch (tp->spec.kind) {
		case PROBE_TRACEPOINT:
			err = resolve_tracepoint(set, tp, why, why_size);
			break;
		case PROBE_SYSCALL:
			err = resolve_syscall(set, tp, why, why_size);
			break;
		case PROBE_UPROBE:
		case PROBE_URETPROBE:
		case PROBE_USDT:
			err = resolve_binary(set, tp, s, why, why_size);
			break;
		case PROBE_KPROBE:
		case PROBE_KRETPROBE:
			err = resolve_kprobe(set, tp, why, why_size);
			break;
		case PROBE_SOFTWARE:
		case PROBE_HARDWARE:
			err = resolve_perf(set, tp, why, why_size);
			break;
		}
		if (err == -ENOMEM && !why[0])
			snprintf(why, why_size, "out of memory");
		if (err)
			return err;
		tp->nsites = set->nsites - tp->first;
		/* a tracepoint wildcard's sites are told apart (--print names the one that
		 * matched, even when it is the only one); a plain tracepoint is the probe */
		if (tp->spec.kind == PROBE_TRACEPOINT &&
		    (tp->nsites > 1 || probe_is_pattern(tp->spec.where) ||
		     probe_is_pattern(tp->spec.what)))
			for (size_t k = 0; k < tp->nsites; k++)
				set->sites[tp->first + k].site = (uint32_t)k + 1;
	}
	return 0;
}

const char *probe_set_label(const struct probe_set *set, uint32_t probe, uint32_t site)
{
	const struct trace_probe *tp;

	if (!probe || probe > set->nprobes)
		return "?";
	tp = &set->probes[probe - 1];
	for (size_t k = 0; site && k < tp->nsites; k++)
		if (set->sites[tp->first + k].site == site)
			return set->sites[tp->first + k].label;
	return tp->spec.text;
}

void probe_set_free(struct probe_set *set)
{
	for (size_t i = 0; i < set->nsites; i++)
		if (set->sites[i].fd >= 0)
			close(set->sites[i].fd);
	free(set->sites);
	set->sites = NULL;
	set->nsites = set->cap = 0;
}
