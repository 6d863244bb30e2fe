// SPDX-License-Identifier: MIT
/* The sampling engine: wires discovery, the loader and the profile together and runs the
 * poll loop. Records arrive in one ring buffer in the order the kernel wrote them, so a
 * process's exit record comes after its last sample; the symbols of a process that ended
 * are freed a moment later (a sample taken on another CPU while it exited may still be in
 * flight). */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/async_watch.h"
#include "engine/engine_impl.h"
#include "symbolize/native.h"
#include "engine/launch.h"
#include "engine/loader.h"
#include "lib/log.h"
#include "lib/pywalk.h"
#include "pystate/dump.h"
#include "profile/gilstats.h"
#include "profile/offcpu.h"
#include "engine/preflight.h"
#include "inspect/proc.h"
#include "inspect/target.h"
#include "lib/util.h"
#include "symbolize/xstack.h"

/* How long the symbols of an ended target are kept for samples still in flight. */
#define GONE_GRACE_NS (250 * 1000000ull)
/* The launched command's exit is checked at most this often (a waitpid each). */
#define LAUNCH_POLL_NS (20 * 1000000ull)
#define DEFAULT_POLL_MS 100
/* --aggregate: the kernel's counts are drained this often, which bounds its maps to the
 * distinct keys of one interval */
#define AGG_DRAIN_NS (1000 * 1000000ull)
/* The kernel-side maps' room for processes at least (--max-processes unset): twice the 4,096
 * Python processes pywalk is made to track at once, so that those and the host's other
 * Python processes fit when pywalk started before them (at boot, say: the rule below,
 * twice the processes running at start, sizes the maps from the few running then). A
 * process config is ~160 bytes of preallocated kernel memory: 1.3 MiB for 8192. */
#define MIN_MAX_PROCS 8192

static int new_failure = EXIT_FAIL;

/* Bytes of stacks held while their threads are off CPU: a thread holds one. */
#define OFFCPU_HELD_BUDGET (64u << 20)

static volatile sig_atomic_t stop_requested, reload_requested, hup_reloads;

static void on_signal(int sig)
{
	if (sig == SIGHUP && hup_reloads)
		reload_requested = 1;
	else
		stop_requested = 1;
}

/* ---- what discovery needs ------------------------------------------------------------- */

static int op_inspect(void *ctx, pid_t pid, struct target *t, bool *maybe_later, char *why,
		      size_t why_size)
{
	struct engine *e = ctx;

	return target_inspect(pid, e->cache, t, maybe_later, why, why_size);
}

/* Off-CPU: the threads of a newly attached target that are already waiting (a deadlock
 * from before pywalk started) would otherwise show only once they wake. Each one asleep
 * now has its stack read here (it cannot move while the thread sleeps) and held as if the
 * kernel had shipped it at a switch-out just now; the kernel is told, so that its wake-up
 * reports the time. A thread the kernel saw leave meanwhile keeps the kernel's stack. */
static void seed_waiting_threads(struct engine *e, const struct target *t)
{
	static uint8_t rec[sizeof(struct pw_sample_hdr) +
			   PW_MAX_FRAMES_CAP * sizeof(struct pw_frame)] __attribute__((aligned(8)));
	char path[64];
	struct dirent *de;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", t->pid);
	dir = opendir(path);
	while (dir && (de = readdir(dir))) {
		pid_t tid = (pid_t)strtol(de->d_name, NULL, 10);
		char st = tid > 0 ? proc_read_task_state(t->pid, tid) : 0;
		uint64_t now;
		int len;

		if (st != 'S' && st != 'D')
			continue;
		now = now_ns();
		len = dump_thread_record(t, tid, e->s.max_depth, now, rec, sizeof(rec));
		if (len <= 0)
			continue;
		if (loader__mark_switched_out(e->ld, tid, t->id, now,
					      st == 'D' ? PW_BLOCK_IO : PW_BLOCK_SLEEP))
			continue;
		/* ran between the read and the mark: the kernel will ship its real stack */
		if (proc_read_task_state(t->pid, tid) != st) {
			loader__unmark_switched_out(e->ld, tid, now);
			continue;
		}
		offcpu__hold(e->off, rec, (size_t)len);
		e->seeded++;
	}
	if (dir)
		closedir(dir);
}

static int op_attach(void *ctx, const struct target *t)
{
	struct engine *e = ctx;
	struct pw_proc cfg = target_config(t);
	int err = loader__add_process(e->ld, t->pid, &cfg);

	if (!err && e->off)
		seed_waiting_threads(e, t);
	return err;
}

static void op_detach(void *ctx, pid_t pid, uint32_t id)
{
	struct engine *e = ctx;

	loader__remove_process(e->ld, pid, id);
}

static void op_follow(void *ctx, pid_t pid, enum discover_follow how)
{
	struct engine *e = ctx;

	loader__follow(e->ld, pid, how == DISCOVER_FOLLOW_CHILDREN);
}

static int op_start_time(void *ctx, pid_t pid, uint64_t *ticks)
{
	(void)ctx;
	return proc_read_start_time(pid, ticks);
}

static pid_t op_nspid(void *ctx, pid_t pid)
{
	(void)ctx;
	return proc_read_nspid(pid);
}

static int op_list_pids(void *ctx, pid_t **out)
{
	DIR *dir = opendir("/proc");
	struct dirent *de;
	pid_t *pids = NULL;
	size_t n = 0, cap = 0;

	(void)ctx;
	if (!dir)
		return -errno;
	while ((de = readdir(dir))) {
		uint32_t pid;

		if (!isdigit((unsigned char)de->d_name[0]) ||
		    parse_u32(de->d_name, 1, INT32_MAX, &pid))
			continue;
		if (grow_array((void **)&pids, &cap, n + 1, sizeof(*pids))) {
			closedir(dir);
			free(pids);
			return -ENOMEM;
		}
		pids[n++] = (pid_t)pid;
	}
	closedir(dir);
	*out = pids;
	return (int)n;
}

static void op_began(void *ctx, const struct target *t)
{
	struct engine *e = ctx;
	int err = profile__add_target(e->prof, t);

	for (size_t i = 0; i < e->ntaps && !err; i++)
		err = profile__add_target(e->taps[i], t);
	if (err)
		e->record_err = err;
	if (e->s.mode == CLI_MODE_GIL && t->ver.free_threaded)
		e->gil_free_threaded++;
	if (e->aw && async_watch__add(e->aw, t, now_ns()))
		e->record_err = -ENOMEM;
	char ver[16];

	pw_debug("PID %d (%s): Python %s, _PyRuntime at 0x%llx in %s, target %u%s%s\n", t->pid,
		 t->comm, py_version_str(&t->ver, ver, sizeof(ver)),
		 (unsigned long long)t->ver.cfg.runtime_addr, t->binary, t->id,
		 t->container[0] ? ", container " : "", t->container);
}

static void op_ended(void *ctx, const struct target *t, enum discover_end why)
{
	struct engine *e = ctx;

	pw_debug("PID %d: target %u ended (%s)\n", t->pid, t->id,
		 why == DISCOVER_END_EXEC ? "exec" : "exit");
	if (e->aw)
		async_watch__remove(e->aw, t->id);
	if (grow_array((void **)&e->gone, &e->gone_cap, e->ngone + 1, sizeof(*e->gone))) {
		profile__target_gone(e->prof, t->id);
		return;
	}
	e->gone[e->ngone++] = (struct gone){ .id = t->id, .at_ns = now_ns() + GONE_GRACE_NS };
}

static void op_note(void *ctx, pid_t pid, const char *why)
{
	(void)ctx;
	pw_debug("PID %d: %s\n", pid, why);
}

static const struct discover_ops discover_ops = {
	.inspect = op_inspect,
	.attach = op_attach,
	.detach = op_detach,
	.follow = op_follow,
	.start_time = op_start_time,
	.nspid = op_nspid,
	.list_pids = op_list_pids,
	.began = op_began,
	.ended = op_ended,
	.note = op_note,
};

/* Free the symbols of targets whose grace period is over (all of them with `all`). */
static void release_gone(struct engine *e, uint64_t now, bool all)
{
	size_t kept = 0;

	for (size_t i = 0; i < e->ngone; i++) {
		if (all || e->gone[i].at_ns <= now) {
			for (size_t t = 0; t < e->ntaps; t++)
				profile__target_gone(e->taps[t], e->gone[i].id);
			profile__target_gone(e->prof, e->gone[i].id);
		} else
			e->gone[kept++] = e->gone[i];
	}
	e->ngone = kept;
}

/* A sample for the profile and the taps. */
static int count_sample(void *ctx, const void *data, size_t size)
{
	struct engine *e = ctx;
	struct xstack_parts parts;
	struct pw_sample_hdr h;

	if (size >= sizeof(h)) {
		memcpy(&h, data, sizeof(h));
		if (e->gil && gilstats__add(e->gil, &h))
			return -ENOMEM;
		/* --mode gil: only the sampler's stacks of threads holding it */
		if (e->s.mode == CLI_MODE_GIL && h.probe == 0 && !(h.flags & PW_SF_GIL_HELD) &&
		    !profile__free_threaded(e->prof, h.target)) {
			if (h.flags & PW_SF_GIL_KNOWN)
				e->gil_not_held++;
			else
				e->gil_unknown++;
			return 0;
		}
	}

	/* --native: unwound once, counted merged by the profile and every tap (a sample whose
	 * stack record never came goes on without, for the profile to reject) */
	if (size >= sizeof(h) && (h.flags & PW_SF_USTACK) && e->native &&
	    !xstack_parts(data, size, &parts) && parts.ustack) {
		native__unwind(e->native, &h, parts.ustack, e->nstack);
		for (size_t i = 0; i < e->ntaps; i++) {
			int err = profile__add_sample_native(e->taps[i], data, size, e->nstack);

			if (err)
				return err;
		}
		return profile__add_sample_native(e->prof, data, size, e->nstack);
	}
	for (size_t i = 0; i < e->ntaps; i++) {
		int err = profile__add_record(e->taps[i], data, size);

		if (err)
			return err;
	}
	return profile__add_record(e->prof, data, size);
}

static int on_record(void *ctx, const void *data, size_t size)
{
	struct engine *e = ctx;
	__u32 kind;

	/* an extra stack waits for its sample, which comes out of the pairing whole, so
	 * everything below holds and counts the two as one record */
	if (e->xs && size >= sizeof(kind)) {
		memcpy(&kind, data, sizeof(kind));
		if (kind == PW_REC_KSTACK || kind == PW_REC_USTACK)
			return xstack__add_stack(e->xs, data, size);
		if (kind == PW_REC_SAMPLE) {
			int err = xstack__pair(e->xs, data, size, &data, &size);

			if (err)
				return err;
		}
	}

	if (size >= sizeof(struct pw_proc_rec)) {
		memcpy(&kind, data, sizeof(kind));
		if (kind == PW_REC_PROC) {
			discover__on_event(e->disc, data, now_ns());
			e->next_tick_ns = 0; /* new processes to look at soon */
			return e->record_err;
		}
	}
	if (size >= sizeof(kind)) {
		memcpy(&kind, data, sizeof(kind));
		if (kind == PW_REC_OFFCPU)
			return e->off ? offcpu__resume(e->off, data, size, count_sample, e) : 0;
		if (kind == PW_REC_AGG_FIRST && e->kagg)
			return kagg__first(e->kagg, e->prof, data, size, count_sample, e);
		if (kind == PW_REC_SAMPLE && e->off) {
			int held = offcpu__hold(e->off, data, size);

			if (held)
				return held < 0 ? held : 0;
		}
		/* taps count samples too; code records feed the one symbol cache they share */
		if (kind == PW_REC_SAMPLE)
			return count_sample(e, data, size);
	}
	return profile__add_record(e->prof, data, size);
}

/* ---- lifetime -------------------------------------------------------------------------- */

/* --kernel's symbols, said once when they cannot name frames: the stacks are still
 * recorded, their kernel frames written as "[kernel unsymbolized]". */
static struct kallsyms *open_kernel_symbols(void)
{
	struct kallsyms *k = kallsyms__load(KALLSYMS_PATH, 0);
	char restrict_level[16] = "?";
	FILE *f;

	if (!k) {
		pw_warn("--kernel: cannot read %s (%s): kernel frames are written as "
			"[kernel unsymbolized]\n",
			KALLSYMS_PATH, strerror(errno));
		return NULL;
	}
	if (kallsyms__stats(k)->restricted) {
		f = fopen("/proc/sys/kernel/kptr_restrict", "re");
		if (f) {
			if (!fgets(restrict_level, sizeof(restrict_level), f))
				strcpy(restrict_level, "?");
			restrict_level[strcspn(restrict_level, "\n")] = 0;
			fclose(f);
		}
		pw_warn("--kernel: %s hides kernel addresses (kernel.kptr_restrict = %s; "
			"root with 0 or 1 sees them): kernel frames are written as [kernel "
			"unsymbolized]\n",
			KALLSYMS_PATH, restrict_level);
	} else if (kallsyms__stats(k)->over_budget) {
		pw_warn("--kernel: %zu kernel symbols left out past %zu MiB\n",
			kallsyms__stats(k)->over_budget, KALLSYMS_DEFAULT_BUDGET >> 20);
	}
	return k;
}

struct engine *engine__new(const struct engine_opts *opts)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct profile_opts popts;
	struct engine *e;
	char why[512];

	if (preflight_check(why, sizeof(why))) {
		pw_err("%s\n", why);
		return NULL;
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		pw_err("out of memory\n");
		return NULL;
	}
	e->s = *opts->sampling;
	e->opts = *opts;
	e->child = (struct launch){ .pid = -1, .release_fd = -1, .exec_err_fd = -1 };
	e->cache = target_cache__new();
	popts = opts->profile;
	if (!popts.symtab_bytes)
		popts.symtab_bytes = e->s.symbol_cache_bytes;
	popts.value = e->s.mode == CLI_MODE_OFFCPU ? PROFILE_VALUE_OFFCPU_NS
		      : e->s.mode == CLI_MODE_WALL ? PROFILE_VALUE_WALL_NS
						   : PROFILE_VALUE_SAMPLES;
	if (e->s.mode == CLI_MODE_OFFCPU || e->s.mode == CLI_MODE_WALL)
		e->off = offcpu__new(e->s.min_block_ns, OFFCPU_HELD_BUDGET);
	if (e->s.native_stack) {
		e->native = native__new(e->s.native_cache ? e->s.native_cache : NATIVE_BUDGET);
		e->nstack = malloc(sizeof(*e->nstack));
		if (!e->native || !e->nstack) {
			pw_err("out of memory\n");
			engine__free(e);
			return NULL;
		}
	}
	if (opts->aggregate) {
		/* the stack a key's first record makes is the one its later hits count for */
		e->kagg = kagg__new();
		popts.on_stack = kagg__on_stack;
		popts.on_stack_ctx = e->kagg;
	}
	if (opts->gil_stats)
		e->gil = gilstats__new();
	/* (trace refuses --kernel with --aggregate: the kernel's counts hold no kernel stack) */
	if (e->s.kernel || e->s.native_stack)
		e->xs = xstack__new();
	e->prof = profile__new(&popts);
	if (!e->cache || !e->prof ||
	    ((e->s.mode == CLI_MODE_OFFCPU || e->s.mode == CLI_MODE_WALL) && !e->off) ||
	    (opts->aggregate && !e->kagg) || (opts->gil_stats && !e->gil) ||
	    ((e->s.kernel || e->s.native_stack) && !e->xs)) {
		pw_err("out of memory\n");
		goto fail;
	}
	/* a named PID that is not there, or not Python, fails before anything is written or
	 * loaded (unless its descendants are what is followed) */
	for (size_t i = 0; i < e->s.npids; i++) {
		struct target t;
		int err = target_inspect(e->s.pids[i], e->cache, &t, NULL, why, sizeof(why));

		if (err && !(err == -ENOEXEC && e->s.subprocesses)) {
			pw_err("%s\n", why);
			goto fail;
		}
		if (!err && (e->s.mode == CLI_MODE_GIL || opts->gil_stats) &&
		    t.ver.cfg.gil_kind == PW_GIL_NONE) {
			char ver[16];

			pw_err("%s: Python %s (PID %d) %s\n",
			       e->s.mode == CLI_MODE_GIL ? "--mode gil" : "--gil-stats",
			       py_version_str(&t.ver, ver, sizeof(ver)), e->s.pids[i],
			       t.ver.free_threaded
				       ? "is a free-threaded build: it has no GIL to attribute"
				       : "does not let pywalk tell which thread holds the GIL");
			new_failure = EXIT_USAGE;
			goto fail;
		}
		if (!err && e->s.async && (t.ver.minor < 14 || !t.ver.aio.present)) {
			char ver[16];

			pw_err("--async: PID %d runs Python %s, which has no asyncio task table "
			       "(3.14+)\n",
			       e->s.pids[i], py_version_str(&t.ver, ver, sizeof(ver)));
			new_failure = EXIT_USAGE;
			goto fail;
		}
	}
	/* from here a temporary output file may exist: these signals end the run through the
	 * normal path, and a closed pipe is a write error to report, not a silent death */
	hup_reloads = opts->hup_reloads;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	return e;
fail:
	engine__free(e);
	return NULL;
}

void engine__free(struct engine *e)
{
	if (!e)
		return;
	if (e->launched)
		launch_kill(&e->child);
	loader__free(e->ld);
	discover__free(e->disc);
	profile__free(e->prof);
	target_cache__free(e->cache);
	offcpu__free(e->off);
	kagg__free(e->kagg);
	native__free(e->native);
	free(e->nstack);
	gilstats__free(e->gil);
	async_watch__free(e->aw);
	xstack__free(e->xs);
	kallsyms__free(e->ksyms); /* after every profile that names frames with it */
	free(e->gone);
	free(e);
}

/* Room for this many processes in the kernel-side maps. */
static uint32_t max_processes(const struct engine *e)
{
	uint32_t n = e->s.max_processes;
	pid_t *pids = NULL;
	int running;

	if (n)
		return n;
	if (!e->s.all && !e->s.subprocesses && !e->s.command)
		return e->s.npids * 4 > 64 ? (uint32_t)e->s.npids * 4 : 64;
	running = op_list_pids(NULL, &pids);
	free(pids);
	return running * 2 > MIN_MAX_PROCS ? (uint32_t)running * 2 : MIN_MAX_PROCS;
}

/* What one sample costs the CPU it lands on: the sampling interrupt itself (the bench's
 * empty program on the same events) and the walk of a 10-frame stack (its section 1),
 * added in round figures. What the bench measured is in doc/performance.md. */
#define SAMPLE_COST_NS 12000u
/* Above this share of a CPU the rate is a cost felt machine-wide: said once at start. */
#define WARN_COST_PCT 5u

static void warn_costly_rate(const struct engine *e)
{
	uint64_t pct = (uint64_t)e->s.frequency_hz * SAMPLE_COST_NS / 10000000u;

	if (e->opts.no_sampler || e->s.mode == CLI_MODE_OFFCPU || pct < WARN_COST_PCT)
		return;
	pw_warn("-F %u costs about %llu%% of %s (%u µs a sample: the interrupt and a "
		"10-frame walk)\n",
		e->s.frequency_hz, (unsigned long long)pct,
		e->s.all ? "every CPU" : "each CPU that runs the target", SAMPLE_COST_NS / 1000);
}

/* The ring buffer holds what arrives while pywalk is late to read it (the program wakes it
 * every 100 ms, or once 1 MiB waits); userspace maps it twice, so its size is RSS. A
 * quarter of a second of 1 KiB samples (a 64-frame stack) from every CPU at -F, within
 * 4-8 MiB; --all (a host's processes at once), off-CPU time (a record per switch-out) and
 * trace's probes (a record per hit) keep the most: their rates are not -F's. What does not
 * fit is counted as lost. --ring-size sets it instead. */
#define RING_MIN_BYTES (4u << 20)
#define RING_MAX_BYTES (8u << 20)

static uint32_t ring_bytes(const struct engine *e)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	uint64_t need = (uint64_t)(cpus > 0 ? cpus : 1) * e->s.frequency_hz * 1024 / 4;
	uint32_t ring = RING_MIN_BYTES;

	if (e->s.ring_bytes)
		return e->s.ring_bytes;
	if (e->s.all || e->s.mode != CLI_MODE_CPU || e->opts.no_sampler)
		return RING_MAX_BYTES;
	while (ring < need && ring < RING_MAX_BYTES)
		ring <<= 1;
	return ring;
}

/* The processes whose threads get the sampler's perf events (and through `inherit` what
 * they start later), or none for events on every CPU: with --all, and when
 * PYWALK_PERF_SCOPE=cpu asks for the old way (the bench compares the two). */
static size_t task_scope(const struct engine *e, pid_t *pids, size_t cap)
{
	const char *scope = getenv("PYWALK_PERF_SCOPE");
	size_t n = 0;

	if (e->s.all || (scope && !strcmp(scope, "cpu")))
		return 0;
	for (size_t i = 0; i < e->s.npids && n < cap; i++)
		pids[n++] = e->s.pids[i];
	if (e->launched && n < cap)
		pids[n++] = e->child.pid;
	return n;
}

int engine__start(struct engine *e)
{
	struct discover_opts dopts = { .all = e->s.all,
				       .subprocesses = e->s.subprocesses,
				       .launched = e->s.command != NULL };
	struct discover_ops ops = discover_ops;
	char why[512] = "";
	int err;

	ops.ctx = e;
	e->disc = discover__new(&dopts, &ops);
	if (!e->disc) {
		pw_err("out of memory\n");
		return -ENOMEM;
	}
	if (e->s.command) {
		err = launch_prepare(&e->child, e->s.command);
		if (err) {
			pw_err("cannot start %s: %s\n", e->s.command[0], strerror(-err));
			return err;
		}
		e->launched = true;
	}
	log_hook_libbpf();
	warn_costly_rate(e);
	pid_t *scope = calloc(e->s.npids + 1, sizeof(*scope));

	if (!scope) {
		pw_err("out of memory\n");
		return -ENOMEM;
	}
	size_t nscope = task_scope(e, scope, e->s.npids + 1);

	e->ld = loader__open(
		&(struct loader_opts){ .mode = e->s.mode == CLI_MODE_OFFCPU ? LOADER_OFF_CPU
					       : e->s.mode == CLI_MODE_WALL ? LOADER_WALL
									    : LOADER_ON_CPU,
				       .min_block_ns = e->s.min_block_ns,
				       .frequency_hz = e->s.frequency_hz,
				       .max_depth = e->s.max_depth,
				       .event = e->s.event,
				       .follow_all = e->s.all,
				       .max_procs = max_processes(e),
				       .no_sampler = e->opts.no_sampler,
				       .latency_probes = e->opts.latency_probes,
				       .filter_probes = e->opts.filter_probes,
				       .aggregate = e->opts.aggregate,
				       .print_args = e->opts.print_args,
				       .kernel_stacks = e->s.kernel,
				       .gil = e->s.mode == CLI_MODE_GIL || e->opts.gil_stats,
				       .aggregate_entries = e->opts.aggregate_entries,
				       .native_stack = e->s.native_stack,
				       .async = e->s.async,
				       .task_pids = scope,
				       .ntask_pids = nscope,
				       .ring_bytes = ring_bytes(e),
				       .on_record = on_record,
				       .ctx = e },
		why, sizeof(why));
	free(scope);
	if (!e->ld) {
		pw_err("%s\n", why);
		return -errno;
	}
	if (e->s.async && !(e->aw = async_watch__new(e->ld))) {
		pw_err("out of memory\n");
		return -ENOMEM;
	}
	/* read once pywalk's own programs are loaded: their frames are told apart by name */
	if (e->s.kernel) {
		e->ksyms = open_kernel_symbols();
		profile__set_ksyms(e->prof, e->ksyms);
	}
	if (loader__sampled_tasks(e->ld))
		pw_debug("perf events on the target%s %zu thread%s (and on what %s), not on every "
			 "CPU\n",
			 nscope == 1 ? "'s" : "s'", loader__sampled_tasks(e->ld),
			 loader__sampled_tasks(e->ld) == 1 ? "" : "s",
			 loader__sampled_tasks(e->ld) == 1 ? "it starts" : "they start");
	if (e->opts.attach) {
		err = e->opts.attach(e->opts.attach_ctx, e->ld);
		if (err)
			return err;
	}
	/* sampling starts with tracking: writers state its period and time span (a probe's
	 * hits have no period) */
	profile__start_sampling(e->prof, e->opts.no_sampler ? 0 : e->s.frequency_hz);
	for (size_t i = 0; i < e->s.npids; i++) {
		err = discover__add_pid(e->disc, e->s.pids[i], why, sizeof(why));
		if (err) {
			pw_err("%s\n", why[0] ? why : strerror(-err));
			return err;
		}
	}
	/* the named processes' configs are in place: their own events may fire now */
	err = loader__start_sampler(e->ld);
	if (err) {
		pw_err("cannot start the perf events: %s\n", strerror(-err));
		return err;
	}
	if (e->s.all) {
		err = discover__scan(e->disc, now_ns());
		if (err) {
			pw_err("cannot list processes: %s\n", strerror(-err));
			return err;
		}
	}
	if (e->launched) {
		err = discover__add_launched(e->disc, e->child.pid);
		if (!err)
			err = launch_release(&e->child);
		if (err) {
			pw_err("cannot run %s: %s\n", e->s.command[0], strerror(-err));
			return err;
		}
	}
	if (e->s.duration_ms)
		e->deadline_ns = now_ns() + e->s.duration_ms * 1000000ull;
	e->next_agg_drain_ns = now_ns() + AGG_DRAIN_NS;
	e->started = true;
	if (e->opts.no_sampler)
		pw_debug("tracing: %zu process(es) now\n", discover__nactive(e->disc));
	else
		pw_debug("sampling at %u Hz: %zu process(es) now\n", e->s.frequency_hz,
			 discover__nactive(e->disc));
	return 0;
}

bool engine__sampling(const struct engine *e)
{
	if (e->finished)
		return false;
	if (e->s.all)
		return true;
	if (e->launched)
		return !e->child.exited;
	return discover__nactive(e->disc) + discover__nwatched(e->disc) > 0;
}

int engine__end_command(struct engine *e, int *status)
{
	if (!e->launched)
		return ENGINE_CMD_NONE;
	/* Ctrl-C reached the command too: give it up to 2 s to end by itself (KeyboardInterrupt;
	 * a loaded machine is slow to unwind it) */
	for (int i = 0; i < 200 && stop_requested && !launch_poll_exit(&e->child); i++)
		usleep(10000);
	if (launch_poll_exit(&e->child)) {
		*status = e->child.status;
		return ENGINE_CMD_EXITED;
	}
	launch_kill(&e->child);
	return ENGINE_CMD_STOPPED;
}

bool engine__interrupted(const struct engine *e)
{
	(void)e;
	return stop_requested;
}

bool engine__take_reload(struct engine *e)
{
	(void)e;
	if (!reload_requested)
		return false;
	reload_requested = 0;
	return true;
}

int engine__add_tap(struct engine *e, struct profile *tap)
{
	if (e->ntaps >= ENGINE_MAX_TAPS)
		return -EBUSY;
	e->taps[e->ntaps++] = tap;
	return 0;
}

void engine__remove_tap(struct engine *e, struct profile *tap)
{
	for (size_t i = 0; i < e->ntaps; i++) {
		if (e->taps[i] != tap)
			continue;
		e->taps[i] = e->taps[--e->ntaps];
		return;
	}
}

void engine__collect_names(struct engine *e)
{
	struct profile *ps[1 + ENGINE_MAX_TAPS] = { e->prof };

	memcpy(ps + 1, e->taps, e->ntaps * sizeof(*ps));
	profile__collect_names(ps, 1 + e->ntaps);
}

static int credit(void *ctx, const struct pw_agg_key *k, const struct pw_agg_val *v)
{
	struct engine *e = ctx;

	return kagg__credit(e->kagg, e->prof, e->agg_draining, k, v);
}

/* --aggregate: the generation counting until now into the profile. The flip waits for the
 * programs still counting in it, so its first records are all in the ring buffer: they are
 * taken before its counts. */
static int drain_aggregate(struct engine *e)
{
	uint32_t gen;
	int err = loader__agg_flip(e->ld, &gen);

	if (!err) {
		err = loader__drain(e->ld);
		err = err < 0 ? err : e->record_err;
	}
	if (!err) {
		e->agg_draining = gen;
		err = loader__agg_take(e->ld, gen, credit, e);
	}
	if (!err)
		kagg__end_gen(e->kagg, gen);
	if (err)
		pw_err("reading the kernel's counts (--aggregate) failed: %s\n", strerror(-err));
	return err;
}

int engine__run(struct engine *e, const struct engine_hook *hook)
{
	int poll_ms = hook && hook->poll_ms ? hook->poll_ms : DEFAULT_POLL_MS;

	while (!stop_requested) {
		uint64_t now = now_ns(), wait_ns = (uint64_t)poll_ms * 1000000ull;
		int err, r;

		if (e->next_tick_ns > now && e->next_tick_ns - now < wait_ns)
			wait_ns = e->next_tick_ns - now;
		if (e->next_tick_ns <= now)
			wait_ns = 0;
		if (e->deadline_ns && e->deadline_ns > now && e->deadline_ns - now < wait_ns)
			wait_ns = e->deadline_ns - now;
		err = loader__poll(e->ld, (int)((wait_ns + 999999) / 1000000));
		if (err < 0 || e->record_err) {
			err = err < 0 ? err : e->record_err;
			pw_err("reading samples failed: %s\n", strerror(-err));
			return err;
		}
		now = now_ns();
		if (now >= e->next_tick_ns)
			e->next_tick_ns = discover__tick(e->disc, now);
		release_gone(e, now, false);
		if (e->aw)
			async_watch__tick(e->aw, now);
		if (e->off) {
			err = offcpu__count_open(e->off, now, count_sample, e);
			if (err) {
				pw_err("counting off-CPU time failed: %s\n", strerror(-err));
				return err;
			}
		}
		if (e->kagg && now >= e->next_agg_drain_ns) {
			err = drain_aggregate(e);
			if (err)
				return err;
			e->next_agg_drain_ns = now + AGG_DRAIN_NS;
		}
		if (e->deadline_ns && now >= e->deadline_ns)
			break;
		if (e->launched && now >= e->next_launch_poll_ns) {
			launch_poll_exit(&e->child);
			e->next_launch_poll_ns = now + LAUNCH_POLL_NS;
		}
		if (!engine__sampling(e))
			break;
		if (hook && hook->tick) {
			r = hook->tick(hook->ctx, e, now);
			if (r < 0)
				return r;
			if (r)
				break;
		}
	}
	return 0;
}

/* A wait the kernel deferred to its syscall's exit, still going when sampling stopped. */
static void read_deferred_wait(void *ctx, pid_t tid, uint32_t target, uint64_t time_ns,
			       uint64_t owed_ns, bool held)
{
	static uint8_t rec[sizeof(struct pw_sample_hdr) +
			   PW_MAX_FRAMES_CAP * sizeof(struct pw_frame)] __attribute__((aligned(8)));
	struct engine *e = ctx;
	const struct target *t = discover__target(e->disc, target);
	uint64_t now = now_ns(), ns;
	int len;

	if (held)
		return; /* its stack is held: the flush counts it */
	ns = owed_ns + (now > time_ns ? now - time_ns : 0);
	if (!t || ns < e->s.min_block_ns)
		return;
	len = dump_thread_record(t, tid, e->s.max_depth, time_ns, rec, sizeof(rec));
	if (len <= 0)
		return;
	((struct pw_sample_hdr *)rec)->weight = ns;
	((struct pw_sample_hdr *)rec)->time_ns = now; /* the wait, counted up to now */
	e->deferred_at_end++;
	count_sample(e, rec, (size_t)len);
}

int engine__finish(struct engine *e)
{
	uint64_t stopped;
	int err;

	if (e->finished || !e->ld)
		return 0;
	e->finished = true;
	/* stop sampling, then take what is still in the ring buffer: after this the counters
	 * and the records agree */
	loader__stop(e->ld);
	stopped = now_ns();
	profile__stop_sampling(e->prof);
	err = loader__drain(e->ld);
	if (err < 0) {
		pw_err("reading samples failed: %s\n", strerror(-err));
		return err;
	}
	/* the last generation, once the programs still running on it are done */
	if (e->kagg) {
		err = drain_aggregate(e);
		if (err)
			return err;
	}
	/* threads still off CPU (a hung one) have waited since they left: those whose stack
	 * the kernel did not read (a deferred wait) are read from memory now */
	if (e->off && e->s.min_block_ns)
		loader__foreach_switched_out(e->ld, read_deferred_wait, e);
	if (e->xs)
		xstack__flush(e->xs);
	if (e->off) {
		err = offcpu__flush(e->off, stopped, count_sample, e);
		if (err < 0) {
			pw_err("counting off-CPU time failed: %s\n", strerror(-err));
			return err;
		}
	}
	return 0;
}

int engine__read_counts(struct engine *e, struct engine_counts *c)
{
	int err;

	memset(c, 0, sizeof(*c));
	if (!e->ld)
		return 0;
	err = loader__read_outcomes(e->ld, c->outcomes, &c->runs);
	/* without the sampler the hits are the probes': all of them together (top --probe) */
	for (uint32_t probe = 1; e->opts.no_sampler && !err && probe < PW_PROBE_OFFCPU; probe++) {
		uint64_t row[PW_OUT__COUNT], runs;

		err = loader__read_probe_outcomes(e->ld, probe, row, &runs);
		for (int i = 0; !err && i < PW_OUT__COUNT; i++)
			c->outcomes[i] += row[i];
		c->runs += err ? 0 : runs;
	}
	if (!err)
		err = loader__read_counters(e->ld, c->counters);
	if (!err && e->off)
		err = loader__read_probe_outcomes(e->ld, PW_PROBE_OFFCPU, c->offcpu_outcomes,
						  &c->offcpu_runs);
	return err;
}

int engine__read_probe_counts(struct engine *e, uint32_t probe, struct engine_counts *c)
{
	int err;

	memset(c, 0, sizeof(*c));
	if (!e->ld)
		return 0;
	err = loader__read_probe_outcomes(e->ld, probe, c->outcomes, &c->runs);
	if (!err)
		err = loader__read_counters(e->ld, c->counters);
	if (!err && probe) {
		uint64_t row[PW_CNT__COUNT];

		err = loader__read_probe_counters(e->ld, probe, row);
		for (int i = PW_CNT_LATENCY_ENTRIES; !err && i <= PW_CNT_LATENCY_UNPAIRED; i++)
			c->counters[i] = row[i];
		for (int i = PW_CNT_AGG_COUNTED; !err && i <= PW_CNT_AGG_COLLISION; i++)
			c->counters[i] = row[i];
	}
	return err;
}

const struct kagg_stats *engine__kagg_stats(const struct engine *e)
{
	return e->kagg ? kagg__stats(e->kagg) : NULL;
}

struct profile *engine__profile(struct engine *e)
{
	return e->prof;
}

const struct discover *engine__discover(const struct engine *e)
{
	return e->disc;
}

int engine__new_failure(void)
{
	return new_failure;
}
