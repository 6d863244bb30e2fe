// SPDX-License-Identifier: MIT
/* The discovery state machine (user/engine/discover.c) over a fake host: a table of processes
 * (their program image says whether they are Python), a model of the kernel side's
 * `procs` map (attach writes a config, the fork/exec/exit hooks copy or delete it and
 * report the id they saw) and a clock. Every call discovery makes is recorded, so each
 * test checks what it did to the kernel and to the profile, not only its own counters. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "engine/discover.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define MS (1000000ull)
#define SEC (1000 * MS)

/* ---- the fake host ------------------------------------------------------------------- */

/* What a program image looks like to inspection. */
struct image {
	int err;	    /* 0: Python; else what target_inspect returns */
	bool later;	    /* with -ENOEXEC: it links a libpython not mapped yet */
	bool free_threaded; /* set on the target with -ENOTSUP */
	unsigned int minor;
};

static const struct image PY311 = { .minor = 11 };
static const struct image PY312 = { .minor = 12 };
static const struct image SHELL = { .err = -ENOEXEC };
/* before the dynamic loader maps libpython */
static const struct image LOADING = { .err = -ENOEXEC, .later = true };

/* Something that happens between inspection and attach (the windows discovery guards). */
enum race {
	RACE_NONE,
	RACE_REUSED,  /* the process exits and another takes its PID */
	RACE_EXITING, /* its exit hook runs; it is a zombie (stat still readable) */
	RACE_EXEC,    /* its exec hook runs: another program, same start time */
};

struct fproc {
	pid_t pid;
	bool alive;
	uint64_t start;
	struct image img, next_img; /* next_img: what RACE_EXEC turns it into */
	int attach_err;
	pid_t nspid;   /* NSpid of a fork child (0: not in a namespace of its own) */
	uint32_t kcfg; /* the kernel's procs[pid].target: 0 = no config */
	enum race race;
	unsigned int ninspect;
};

enum call_kind { C_ATTACH, C_DETACH, C_FOLLOW, C_BEGAN, C_ENDED, C_NOTE, C__COUNT };

struct call {
	enum call_kind kind;
	pid_t pid;
	uint32_t id;
	int arg; /* follow: enum discover_follow; ended: enum discover_end */
};

#define MAX_PROCS 4096
#define MAX_CALLS 4096
#define MAX_PENDING 16

static struct {
	struct fproc procs[MAX_PROCS];
	struct call calls[MAX_CALLS];
	size_t ncalls, counts[C__COUNT];
	uint32_t kernel_next;			 /* the kernel's next_target counter */
	struct pw_proc_rec pending[MAX_PENDING]; /* hooks that ran in a race, not delivered */
	size_t npending;
	unsigned int nlist;
	int list_err;
	/* began/ended balance per target id: a target ends once, after it began */
	uint8_t open[1 << 16];
	size_t nopen;
	uint64_t clock_ticks;
	uint64_t now; /* the monotonic clock an inspection stamps its target with */
} w;

static struct fproc *proc(pid_t pid)
{
	assert_true(pid > 0 && pid < MAX_PROCS);
	return &w.procs[pid];
}

/* A new process (a new lifetime of `pid`, if it was used before). */
static struct fproc *spawn(pid_t pid, struct image img)
{
	struct fproc *p = proc(pid);

	assert_false(p->alive);
	*p = (struct fproc){
		.pid = pid, .alive = true, .img = img, .start = ++w.clock_ticks * 100
	};
	return p;
}

static void record(enum call_kind kind, pid_t pid, uint32_t id, int arg)
{
	w.counts[kind]++;
	if (w.ncalls < MAX_CALLS)
		w.calls[w.ncalls++] = (struct call){ kind, pid, id, arg };
}

static size_t ncalls(enum call_kind kind, pid_t pid)
{
	size_t n = 0;

	assert_true(w.ncalls < MAX_CALLS); /* the log is whole */
	for (size_t i = 0; i < w.ncalls; i++)
		n += w.calls[i].kind == kind && w.calls[i].pid == pid;
	return n;
}

/* The last call of `kind` for `pid` (there must be one). */
static const struct call *last_call(enum call_kind kind, pid_t pid)
{
	for (size_t i = w.ncalls; i-- > 0;)
		if (w.calls[i].kind == kind && w.calls[i].pid == pid)
			return &w.calls[i];
	fail_msg("no call of kind %d for PID %d", kind, pid);
	return NULL;
}

static int op_inspect(void *ctx, pid_t pid, struct target *t, bool *maybe_later, char *why,
		      size_t why_size)
{
	struct fproc *p = proc(pid);

	(void)ctx;
	memset(t, 0, sizeof(*t));
	t->seen_ns = w.now; /* as target_inspect: before anything is read */
	*maybe_later = false;
	p->ninspect++;
	if (!p->alive) {
		snprintf(why, why_size, "no process %d", pid);
		return -ESRCH;
	}
	/* as target_inspect: who it is is known before what it runs */
	t->pid = pid;
	t->start_ticks = p->start;
	if (p->img.err) {
		*maybe_later = p->img.later;
		t->ver.free_threaded = p->img.free_threaded;
		snprintf(why, why_size, "PID %d: %s", pid, strerror(-p->img.err));
		return p->img.err;
	}
	t->nspid = pid;
	t->initialized = true;
	snprintf(t->comm, sizeof(t->comm), "fake%d", pid);
	t->code_type = 0x7000000ull + (uint64_t)p->img.minor;
	t->ver.major = 3;
	t->ver.minor = p->img.minor;
	t->ver.hexversion = 0x03000000ull | (uint64_t)p->img.minor << 16;
	t->ver.cfg.runtime_addr = 0x5500000000ull + (uint64_t)pid * 0x1000;
	return 0;
}

/* The kernel side's hooks: each deletes (exec, exit) the config it finds and reports the
 * target id it saw, exactly as the sched_process_* programs do. */
static struct pw_proc_rec hook_exit(struct fproc *p)
{
	struct pw_proc_rec r = { .kind = PW_REC_PROC,
				 .event = PW_PROC_EXIT,
				 .pid = (uint32_t)p->pid,
				 .target = p->kcfg };

	p->kcfg = 0;
	return r;
}

static struct pw_proc_rec hook_exec(struct fproc *p)
{
	struct pw_proc_rec r = { .kind = PW_REC_PROC,
				 .event = PW_PROC_EXEC,
				 .pid = (uint32_t)p->pid,
				 .target = p->kcfg };

	p->kcfg = 0;
	return r;
}

static void queue(struct pw_proc_rec r)
{
	assert_true(w.npending < MAX_PENDING);
	w.pending[w.npending++] = r;
}

static int op_attach(void *ctx, const struct target *t)
{
	struct fproc *p = proc(t->pid);

	(void)ctx;
	record(C_ATTACH, t->pid, t->id, 0);
	switch (p->race) {
	case RACE_NONE:
		break;
	case RACE_REUSED:
		queue(hook_exit(p));
		p->alive = false;
		spawn(t->pid, SHELL);
		break;
	case RACE_EXITING:
		queue(hook_exit(p)); /* a zombie until reaped: /proc/PID/stat still reads */
		break;
	case RACE_EXEC:
		queue(hook_exec(p));
		p->img = p->next_img;
		break;
	}
	p->race = RACE_NONE;
	if (p->attach_err)
		return p->attach_err;
	p->kcfg = t->id; /* BPF_ANY: a config of another lifetime is replaced */
	return 0;
}

static void op_detach(void *ctx, pid_t pid, uint32_t id)
{
	struct fproc *p = proc(pid);

	(void)ctx;
	record(C_DETACH, pid, id, 0);
	if (!id || p->kcfg == id)
		p->kcfg = 0;
}

static void op_follow(void *ctx, pid_t pid, enum discover_follow how)
{
	(void)ctx;
	record(C_FOLLOW, pid, 0, (int)how);
}

static int op_start_time(void *ctx, pid_t pid, uint64_t *ticks)
{
	struct fproc *p = proc(pid);

	(void)ctx;
	if (!p->alive)
		return -ESRCH;
	*ticks = p->start;
	return 0;
}

static pid_t op_nspid(void *ctx, pid_t pid)
{
	(void)ctx;
	return proc(pid)->nspid ? proc(pid)->nspid : pid;
}

static int op_list_pids(void *ctx, pid_t **out)
{
	pid_t *pids = calloc(MAX_PROCS, sizeof(*pids));
	int n = 0;

	(void)ctx;
	w.nlist++;
	if (w.list_err)
		return w.list_err;
	assert_non_null(pids);
	for (pid_t pid = 1; pid < MAX_PROCS; pid++)
		if (w.procs[pid].alive)
			pids[n++] = pid;
	*out = pids;
	return n;
}

/* Slot of a target id in w.open: the two numberings (userspace, kernel) apart. */
static size_t open_slot(uint32_t id)
{
	assert_true((id & ~PW_TARGET_KERNEL_BIT) < (1u << 15));
	return (id & 0x7fff) | (id & PW_TARGET_KERNEL_BIT ? 1u << 15 : 0);
}

static void op_began(void *ctx, const struct target *t)
{
	(void)ctx;
	record(C_BEGAN, t->pid, t->id, 0);
	assert_int_equal(w.open[open_slot(t->id)], 0);
	w.open[open_slot(t->id)] = 1;
	w.nopen++;
}

static void op_ended(void *ctx, const struct target *t, enum discover_end why)
{
	(void)ctx;
	record(C_ENDED, t->pid, t->id, (int)why);
	assert_int_equal(w.open[open_slot(t->id)], 1); /* began, and not ended before */
	w.open[open_slot(t->id)] = 0;
	w.nopen--;
}

static void op_note(void *ctx, pid_t pid, const char *why)
{
	(void)ctx;
	(void)why;
	record(C_NOTE, pid, 0, 0);
}

static const struct discover_ops ops = {
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

static int reset(void **state)
{
	(void)state;
	memset(&w, 0, sizeof(w));
	return 0;
}

static struct discover *new_discover(struct discover_opts opts)
{
	struct discover *d = discover__new(&opts, &ops);

	assert_non_null(d);
	return d;
}

/* ---- events, as the kernel side writes them ------------------------------------------ */

static void deliver(struct discover *d, struct pw_proc_rec r, uint64_t now)
{
	discover__on_event(d, &r, now);
}

static void deliver_pending(struct discover *d, uint64_t now)
{
	for (size_t i = 0; i < w.npending; i++)
		deliver(d, w.pending[i], now);
	w.npending = 0;
}

/* `parent` forks `child`: a child of a configured parent inherits the config with a
 * kernel-side id, unless the map is `full`. Returns the id it got (0: none). */
static uint32_t fork_proc(struct discover *d, pid_t parent, pid_t child, struct image img,
			  bool full, uint64_t now)
{
	struct fproc *pp = proc(parent), *c = spawn(child, img);
	struct pw_proc_rec r = { .kind = PW_REC_PROC,
				 .event = PW_PROC_FORK,
				 .pid = (uint32_t)child,
				 .ppid = (uint32_t)parent,
				 .parent_target = pp->kcfg };

	if (pp->kcfg && !full) {
		c->kcfg = PW_TARGET_KERNEL_BIT | ++w.kernel_next;
		r.target = c->kcfg;
	}
	deliver(d, r, now);
	return r.target;
}

static void exec_proc(struct discover *d, pid_t pid, struct image img, uint64_t now)
{
	struct fproc *p = proc(pid);
	struct pw_proc_rec r = hook_exec(p);

	p->img = img;
	deliver(d, r, now);
}

static void exit_proc(struct discover *d, pid_t pid, uint64_t now)
{
	struct fproc *p = proc(pid);
	struct pw_proc_rec r = hook_exit(p);

	p->alive = false;
	deliver(d, r, now);
}

/* The target sampled now under `pid` (there must be exactly one). */
static const struct target *target_of(const struct discover *d, pid_t pid)
{
	const struct target *found = NULL;

	for (size_t i = 0; i < discover__nactive(d); i++) {
		const struct target *t = discover__active(d, i);

		if (t->pid == pid) {
			assert_null(found);
			found = t;
		}
	}
	return found;
}

static uint32_t id_of(const struct discover *d, pid_t pid)
{
	const struct target *t = target_of(d, pid);

	assert_non_null(t);
	return t->id;
}

/* The kernel samples what discovery believes it samples: every active target has its
 * config in the kernel, and no config is left that no active target owns. */
static void assert_kernel_agrees(const struct discover *d)
{
	size_t configs = 0;

	for (size_t i = 0; i < discover__nactive(d); i++) {
		const struct target *t = discover__active(d, i);

		assert_int_equal(proc(t->pid)->kcfg, t->id);
	}
	for (pid_t pid = 1; pid < MAX_PROCS; pid++)
		configs += w.procs[pid].kcfg != 0;
	assert_int_equal(configs, discover__nactive(d));
}

static const struct discover_stats *stats(const struct discover *d)
{
	return discover__stats(d);
}

/* ---- named PIDs ---------------------------------------------------------------------- */

static void test_named_python_pid_becomes_a_target_whose_execs_are_followed(void **state)
{
	struct discover *d = new_discover((struct discover_opts){ 0 });
	char why[128];
	const struct target *t;

	(void)state;
	spawn(100, PY311);
	assert_int_equal(discover__add_pid(d, 100, why, sizeof(why)), 0);
	assert_int_equal(discover__nactive(d), 1);
	assert_int_equal(discover__nwatched(d), 0);
	t = discover__target(d, id_of(d, 100));
	assert_non_null(t);
	assert_int_equal(t->pid, 100);
	assert_true(t->id && !(t->id & PW_TARGET_KERNEL_BIT));
	assert_int_equal(t->ver.minor, 11);
	assert_int_equal(last_call(C_FOLLOW, 100)->arg, DISCOVER_FOLLOW_EXEC);
	assert_int_equal(ncalls(C_ATTACH, 100), 1);
	assert_int_equal(last_call(C_BEGAN, 100)->id, t->id);
	assert_int_equal(stats(d)->targets, 1);
	assert_int_equal(stats(d)->inspections, 1);
	assert_kernel_agrees(d);
	discover__free(d);
}

static void test_named_pid_that_is_not_python_is_an_error(void **state)
{
	struct discover *d = new_discover((struct discover_opts){ 0 });
	char why[128];

	(void)state;
	spawn(100, SHELL);
	assert_int_equal(discover__add_pid(d, 100, why, sizeof(why)), -ENOEXEC);
	assert_true(why[0]);
	assert_int_equal(discover__nactive(d), 0);
	assert_int_equal(discover__nwatched(d), 0); /* nothing to wait for */
	assert_int_equal(w.counts[C_ATTACH], 0);
	discover__free(d);
}

static void test_named_non_python_pid_is_watched_when_its_subprocesses_are_followed(void **state)
{
	struct discover *d = new_discover((struct discover_opts){ .subprocesses = true });
	char why[128];

	(void)state;
	spawn(100, SHELL);
	assert_int_equal(discover__add_pid(d, 100, why, sizeof(why)), 0);
	assert_int_equal(last_call(C_FOLLOW, 100)->arg, DISCOVER_FOLLOW_CHILDREN);
	assert_int_equal(discover__nactive(d), 0);
	assert_int_equal(discover__nwatched(d), 1);
	/* the shell starts Python: the child, not configured, tells us when it execs */
	fork_proc(d, 100, 101, SHELL, false, 5 * MS);
	assert_int_equal(discover__nwatched(d), 2);
	exec_proc(d, 101, PY312, 6 * MS);
	assert_int_equal(discover__nactive(d), 1);
	assert_int_equal(discover__nwatched(d), 1);
	assert_int_equal(target_of(d, 101)->ver.minor, 12);
	assert_kernel_agrees(d);
	discover__free(d);
}

static void test_named_pid_that_is_gone_is_an_error_and_not_counted_as_a_skip(void **state)
{
	struct discover *d = new_discover((struct discover_opts){ 0 });
	char why[128];

	(void)state;
	assert_int_equal(discover__add_pid(d, 100, why, sizeof(why)), -ESRCH);
	for (int i = 0; i < DISCOVER_SKIP__COUNT; i++)
		assert_int_equal(stats(d)->skipped[i], 0);
	discover__free(d);
}

/* ---- fork ---------------------------------------------------------------------------- */

static void test_fork_child_of_a_target_inherits_its_config_with_the_kernel_id(void **state)
{
	struct discover *d = new_discover((struct discover_opts){ .subprocesses = true });
	const struct target *parent, *child;
	char why[128];
	uint32_t kid;

	(void)state;
	spawn(100, PY311);
	assert_int_equal(discover__add_pid(d, 100, why, sizeof(why)), 0);
	/* the child's image says "not Python" to an inspection: it must not be inspected */
	kid = fork_proc(d, 100, 101, SHELL, false, 1 * MS);
	assert_true(kid & PW_TARGET_KERNEL_BIT);
	assert_int_equal(discover__nactive(d), 2);
	parent = discover__target(d, id_of(d, 100));
	child = discover__target(d, kid);
	assert_non_null(child);
	assert_int_equal(child->pid, 101);
	assert_int_equal(child->id, kid);
	assert_int_equal(child->start_ticks, proc(101)->start);
	assert_int_not_equal(child->start_ticks, parent->start_ticks);
	/* the same memory image: the parent's interpreter, version and offsets */
	assert_int_equal(child->ver.minor, parent->ver.minor);
	assert_int_equal(child->ver.cfg.runtime_addr, parent->ver.cfg.runtime_addr);
	assert_int_equal(child->code_type, parent->code_type);
	assert_int_equal(proc(101)->ninspect, 0);   /* no ELF read again */
	assert_int_equal(ncalls(C_ATTACH, 101), 0); /* the kernel did it */
	assert_int_equal(last_call(C_BEGAN, 101)->id, kid);
	assert_int_equal(stats(d)->inherited, 1);
	assert_int_equal(stats(d)->targets, 2);
	assert_kernel_agrees(d);
	discover__free(d);
}

static void test_fork_child_takes_its_namespace_pid_from_the_ops(void **state)
{
	struct discover *d = new_discover((struct discover_opts){ .subprocesses = true });
	char why[128];
	struct pw_proc_rec r;

	(void)state;
	spawn(100, PY311);
	assert_int_equal(discover__add_pid(d, 100, why, sizeof(why)), 0);
	spawn(101, PY311)->nspid = 7;
	proc(101)->kcfg = PW_TARGET_KERNEL_BIT | 1;
	r = (struct pw_proc_rec){ .kind = PW_REC_PROC,
				  .event = PW_PROC_FORK,
				  .pid = 101,
				  .ppid = 100,
				  .target = PW_TARGET_KERNEL_BIT | 1,
				  .parent_target = id_of(d, 100) };
	deliver(d, r, 0);
	assert_int_equal(target_of(d, 101)->nspid, 7);
	assert_int_equal(target_of(d, 100)->nspid, 100);
	discover__free(d);
}

static void test_fork_child_without_room_in_the_map_is_counted_as_map_full(void **state)
{
	struct discover *d = new_discover((struct discover_opts){ .subprocesses = true });
	char why[128];

	(void)state;
	spawn(100, PY311);
	assert_int_equal(discover__add_pid(d, 100, why, sizeof(why)), 0);
	assert_int_equal(fork_proc(d, 100, 101, PY311, true, 0), 0);
	assert_int_equal(stats(d)->skipped[DISCOVER_SKIP_MAP_FULL], 1);
	assert_int_equal(discover__nactive(d), 1);
	assert_int_equal(discover__nwatched(d), 0);
	assert_int_equal(stats(d)->inherited, 0);
	assert_kernel_agrees(d);
	discover__free(d);
}

static void test_fork_child_of_an_unknown_parent_is_inspected_afresh(void **state)
{
	struct discover *d = new_discover((struct discover_opts){ .subprocesses = true });
	struct pw_proc_rec r;

	(void)state;
	/* the parent's records were lost: the kernel knows it (id 5), discovery does not */
	spawn(100, PY312)->kcfg = 5;
	w.kernel_next = 40;
	fork_proc(d, 100, 101, PY312, false, 0);
	assert_int_equal(proc(101)->ninspect, 1);
	assert_int_equal(target_of(d, 101)->id, PW_TARGET_KERNEL_BIT | 41);
	assert_int_equal(target_of(d, 101)->ver.minor, 12);
	assert_int_equal(target_of(d, 101)->start_ticks, proc(101)->start);
	assert_int_equal(ncalls(C_ATTACH, 101), 0);
	/* and one that is not Python after all: its inherited config is taken back */
	spawn(102, SHELL);
	r = (struct pw_proc_rec){ .kind = PW_REC_PROC,
				  .event = PW_PROC_FORK,
				  .pid = 102,
				  .ppid = 100,
				  .target = PW_TARGET_KERNEL_BIT | 42,
				  .parent_target = 5 };
	proc(102)->kcfg = r.target;
	deliver(d, r, 0);
	assert_null(target_of(d, 102));
	assert_int_equal(last_call(C_DETACH, 102)->id, r.target);
	assert_int_equal(proc(102)->kcfg, 0);
	discover__free(d);
}

static void test_fork_child_that_exited_at_once_is_detached_not_a_target(void **state)
{
	struct discover *d = new_discover((struct discover_opts){ .subprocesses = true });
	struct pw_proc_rec r;
	char why[128];

	(void)state;
	spawn(100, PY311);
	assert_int_equal(discover__add_pid(d, 100, why, sizeof(why)), 0);
	r = (struct pw_proc_rec){ .kind = PW_REC_PROC,
				  .event = PW_PROC_FORK,
				  .pid = 101,
				  .ppid = 100,
				  .target = PW_TARGET_KERNEL_BIT | 1,
				  .parent_target = id_of(d, 100) };
	deliver(d, r, 0); /* pid 101 is already gone: no start time */
	assert_null(target_of(d, 101));
	assert_int_equal(ncalls(C_DETACH, 101), 1);
	assert_int_equal(discover__nactive(d), 1);
	discover__free(d);
}

/* ---- exec ---------------------------------------------------------------------------- */

static void test_exec_of_a_target_ends_it_and_a_python_image_gets_a_new_id(void **state)
{
	struct discover *d = new_discover((struct discover_opts){ 0 });
	char why[128];
	uint32_t old, new;

	(void)state;
	spawn(100, PY311);
	assert_int_equal(discover__add_pid(d, 100, why, sizeof(why)), 0);
	old = id_of(d, 100);
	exec_proc(d, 100, PY312, 10 * MS);
	assert_int_equal(last_call(C_ENDED, 100)->id, old);
	assert_int_equal(last_call(C_ENDED, 100)->arg, DISCOVER_END_EXEC);
	new = id_of(d, 100);
	assert_int_not_equal(new, old);
	assert_null(discover__target(d, old));
	assert_int_equal(discover__target(d, new)->ver.minor, 12);
	assert_int_equal(discover__nactive(d), 1);
	assert_int_equal(stats(d)->targets, 2);
	assert_kernel_agrees(d);
	discover__free(d);
}

/* After an exec the dynamic loader maps libpython within milliseconds: 1 ms doubling to
 * 512 ms, then the slow schedule for an embedder that dlopens one later. */
static void test_exec_into_a_non_python_image_is_retried_fast_then_slowly(void **state)
{
	static const uint64_t fast[] = { 1, 2, 4, 8, 16, 32, 64, 128, 256, 512 };
	static const uint64_t slow[] = { 1000, 5000, 30000, 120000, 300000, 300000, 300000 };
	struct discover *d = new_discover((struct discover_opts){ 0 });
	uint64_t now = 7 * SEC, next;
	char why[128];

	(void)state;
	spawn(100, PY311);
	assert_int_equal(discover__add_pid(d, 100, why, sizeof(why)), 0);
	exec_proc(d, 100, SHELL, now);
	assert_int_equal(last_call(C_ENDED, 100)->arg, DISCOVER_END_EXEC);
	assert_int_equal(discover__nactive(d), 0);
	assert_int_equal(discover__nwatched(d), 1);
	assert_int_equal(proc(100)->ninspect, 2);
	/* nothing is due before its time */
	assert_int_equal(discover__tick(d, now), now + 1 * MS);
	assert_int_equal(proc(100)->ninspect, 2);
	for (size_t i = 0; i < ARRAY_SIZE(fast); i++) {
		next = discover__tick(d, now + fast[i] * MS - 1);
		assert_int_equal(next, now + fast[i] * MS);
		now = next;
		next = discover__tick(d, now);
		assert_int_equal(proc(100)->ninspect, 3 + i);
		assert_int_equal(next - now,
				 i + 1 < ARRAY_SIZE(fast) ? fast[i + 1] * MS : slow[0] * MS);
	}
	for (size_t i = 0; i < ARRAY_SIZE(slow) - 1; i++) {
		now += slow[i] * MS;
		next = discover__tick(d, now);
		assert_int_equal(next - now, slow[i + 1] * MS);
	}
	/* an embedder dlopens an interpreter: found on the next slow retry */
	proc(100)->img = PY312;
	now = next;
	discover__tick(d, now);
	assert_int_equal(discover__nwatched(d), 0);
	assert_int_equal(target_of(d, 100)->ver.minor, 12);
	assert_int_equal(discover__tick(d, now), UINT64_MAX); /* nothing left to retry */
	assert_kernel_agrees(d);
	discover__free(d);
}

/* A program that links libpython is found as soon as the loader maps it. */
static void test_exec_of_a_program_that_links_libpython_finds_it_on_a_fast_retry(void **state)
{
	struct discover *d = new_discover((struct discover_opts){ .subprocesses = true });
	char why[128];

	(void)state;
	spawn(100, SHELL);
	assert_int_equal(discover__add_pid(d, 100, why, sizeof(why)), 0);
	discover__tick(d, 0);
	exec_proc(d, 100, LOADING, 1 * SEC);
	assert_int_equal(discover__tick(d, 1 * SEC), 1 * SEC + 1 * MS);
	assert_int_equal(discover__tick(d, 1 * SEC + 1 * MS), 1 * SEC + 3 * MS);
	proc(100)->img = PY312;
	discover__tick(d, 1 * SEC + 3 * MS);
	assert_int_equal(target_of(d, 100)->ver.minor, 12);
	assert_int_equal(discover__nwatched(d), 0);
	discover__free(d);
}

/* A shell script that execs again (sh -> env -> python3): each new program is looked at
 * soon after its exec, however long the previous one was retried. */
static void test_every_exec_restarts_the_fast_schedule(void **state)
{
	struct discover *d = new_discover((struct discover_opts){ .subprocesses = true });
	uint64_t now = 0;
	char why[128];

	(void)state;
	spawn(100, SHELL);
	assert_int_equal(discover__add_pid(d, 100, why, sizeof(why)), 0);
	exec_proc(d, 100, LOADING, now);
	for (int i = 0; i < 8; i++)
		now = discover__tick(d, now); /* 1, 2, ..., 128 ms */
	assert_int_equal(now, 255 * MS);
	exec_proc(d, 100, LOADING, 300 * MS);
	assert_int_equal(discover__tick(d, 300 * MS), 301 * MS);
	discover__free(d);
}

/* "It links a libpython not mapped yet" can stay true (a process stopped right after its
 * exec, a libpython whose file cannot be opened): after the fast schedule it is retried
 * slowly, not fast again every second. */
static void test_libpython_that_never_maps_falls_back_to_the_slow_schedule(void **state)
{
	static const uint64_t slow[] = { 1000, 5000, 30000, 120000, 300000 };
	struct discover *d = new_discover((struct discover_opts){ .subprocesses = true });
	uint64_t now = 0, next;
	char why[128];

	(void)state;
	spawn(100, SHELL);
	assert_int_equal(discover__add_pid(d, 100, why, sizeof(why)), 0);
	exec_proc(d, 100, LOADING, now);
	for (int i = 0; i < 10; i++)
		now = discover__tick(d, now); /* the first is not due: 9 retries, to 511 ms */
	assert_int_equal(now, 1023 * MS);
	for (size_t i = 0; i < ARRAY_SIZE(slow); i++) {
		next = discover__tick(d, now);
		assert_int_equal(next - now, slow[i] * MS);
		now = next;
	}
	assert_int_equal(proc(100)->ninspect, 2 + 9 + ARRAY_SIZE(slow));
	discover__free(d);
}

/* Its maps list an interpreter whose memory cannot be read yet (the loader still mapping
 * it after an exec): no verdict, so no skip; it is looked at on the fast schedule, and
 * only once: what stays unreadable is retried slowly. */
static void test_unreadable_interpreter_is_retried_soon_and_not_counted(void **state)
{
	static const uint64_t slow[] = { 1000, 5000, 30000 };
	struct discover *d = new_discover((struct discover_opts){ .subprocesses = true });
	uint64_t now = 0, next;
	char why[128];

	(void)state;
	spawn(100, SHELL);
	assert_int_equal(discover__add_pid(d, 100, why, sizeof(why)), 0);
	exec_proc(d, 100, (struct image){ .err = -EFAULT }, now);
	assert_int_equal(discover__nwatched(d), 1);
	for (int i = 0; i < 10; i++)
		now = discover__tick(d, now);
	assert_int_equal(now, 1023 * MS);
	for (size_t i = 0; i < ARRAY_SIZE(slow); i++) {
		next = discover__tick(d, now);
		assert_int_equal(next - now, slow[i] * MS);
		now = next;
	}
	for (int i = 0; i < DISCOVER_SKIP__COUNT; i++)
		assert_int_equal(stats(d)->skipped[i], 0);
	proc(100)->img = PY312; /* mapped at last */
	discover__tick(d, now);
	assert_non_null(target_of(d, 100));
	discover__free(d);
}

/* ---- exit and PID reuse -------------------------------------------------------------- */

static void test_exit_ends_the_target_and_drops_its_watch(void **state)
{
	struct discover *d = new_discover((struct discover_opts){ .subprocesses = true });
	char why[128];
	uint32_t id;

	(void)state;
	spawn(100, SHELL);
	assert_int_equal(discover__add_pid(d, 100, why, sizeof(why)), 0);
	fork_proc(d, 100, 101, SHELL, false, 0);
	exec_proc(d, 101, PY311, 0);
	id = id_of(d, 101);
	exit_proc(d, 101, 1 * SEC);
	assert_int_equal(last_call(C_ENDED, 101)->id, id);
	assert_int_equal(last_call(C_ENDED, 101)->arg, DISCOVER_END_EXIT);
	assert_null(discover__target(d, id));
	assert_int_equal(discover__nactive(d), 0);
	exit_proc(d, 100, 2 * SEC);
	assert_int_equal(discover__nwatched(d), 0);
	assert_int_equal(stats(d)->not_python, 1); /* the shell never ran Python */
	assert_int_equal(discover__tick(d, 3 * SEC), UINT64_MAX);
	assert_kernel_agrees(d);
	discover__free(d);
}

static void test_reused_pid_gets_a_new_target_id(void **state)
{
	struct discover *d = new_discover((struct discover_opts){ .all = true });
	uint32_t old, new;

	(void)state;
	spawn(100, PY311);
	assert_int_equal(discover__scan(d, 0), 0);
	old = id_of(d, 100);
	exit_proc(d, 100, 1 * SEC);
	/* another process gets PID 100 and runs Python */
	spawn(100, SHELL);
	exec_proc(d, 100, PY311, 2 * SEC);
	new = id_of(d, 100);
	assert_int_not_equal(new, old);
	assert_null(discover__target(d, old));
	assert_int_equal(discover__target(d, new)->start_ticks, proc(100)->start);
	/* and the old id stays unknown through the new lifetime's end */
	exit_proc(d, 100, 3 * SEC);
	assert_null(discover__target(d, old));
	assert_null(discover__target(d, new));
	assert_int_equal(stats(d)->targets, 2);
	assert_kernel_agrees(d);
	discover__free(d);
}

/* The process inspected died and its PID went to another between inspection and attach:
 * no exit hook removed the config written for the dead one, so discovery does. */
static void test_process_replaced_before_attach_is_detached_and_not_a_target(void **state)
{
	struct discover *d = new_discover((struct discover_opts){ .all = true });

	(void)state;
	spawn(100, PY311)->race = RACE_REUSED;
	assert_int_equal(discover__scan(d, 0), 0);
	assert_int_equal(ncalls(C_ATTACH, 100), 1);
	assert_int_equal(ncalls(C_DETACH, 100), 1);
	assert_int_equal(last_call(C_DETACH, 100)->id, last_call(C_ATTACH, 100)->id);
	assert_null(target_of(d, 100));
	assert_int_equal(w.counts[C_BEGAN], 0);
	deliver_pending(d, 1 * MS); /* the old lifetime's exit */
	assert_int_equal(w.counts[C_ENDED], 0);
	assert_kernel_agrees(d);
	discover__free(d);
}

/* Its exit hook ran between inspection and attach (found nothing to delete), and it is a
 * zombie, so its start time still reads: the exit record without a target id ends it, and
 * the config written after the hook must go too, or a later process given the PID would
 * be sampled under this lifetime's config. */
static void test_exit_seen_before_attach_leaves_no_config_behind(void **state)
{
	struct discover *d = new_discover((struct discover_opts){ .all = true });
	uint32_t id;

	(void)state;
	spawn(100, PY311)->race = RACE_EXITING;
	assert_int_equal(discover__scan(d, 0), 0);
	id = id_of(d, 100);
	proc(100)->alive = false;
	deliver_pending(d, 1 * MS);
	assert_int_equal(last_call(C_ENDED, 100)->id, id);
	assert_null(discover__target(d, id));
	assert_int_equal(proc(100)->kcfg, 0);
	assert_kernel_agrees(d);
	discover__free(d);
}

/* Its exec hook ran between inspection and attach (nothing to delete yet), so the config
 * written describes the image that is gone: the exec record without a target id must end
 * that lifetime and take its config back, whatever the new image is. */
static void test_exec_seen_before_attach_ends_the_old_image(void **state)
{
	struct discover *d = new_discover((struct discover_opts){ 0 });
	char why[128];
	uint32_t id;

	(void)state;
	spawn(100, PY311)->race = RACE_EXEC;
	proc(100)->next_img = SHELL;
	assert_int_equal(discover__add_pid(d, 100, why, sizeof(why)), 0);
	id = id_of(d, 100);
	deliver_pending(d, 1 * MS);
	assert_int_equal(last_call(C_ENDED, 100)->id, id);
	assert_int_equal(last_call(C_ENDED, 100)->arg, DISCOVER_END_EXEC);
	assert_null(discover__target(d, id));
	assert_int_equal(discover__nactive(d), 0);
	assert_int_equal(discover__nwatched(d), 1);
	assert_kernel_agrees(d);
	/* into Python again: one target, the new image's */
	spawn(200, PY311)->race = RACE_EXEC;
	proc(200)->next_img = PY312;
	assert_int_equal(discover__add_pid(d, 200, why, sizeof(why)), 0);
	id = id_of(d, 200);
	deliver_pending(d, 2 * MS);
	assert_int_equal(last_call(C_ENDED, 200)->id, id);
	assert_int_not_equal(id_of(d, 200), id);
	assert_int_equal(target_of(d, 200)->ver.minor, 12);
	assert_kernel_agrees(d);
	discover__free(d);
}

/* The other order: the exec was recorded before discovery looked (the record still in the
 * ring buffer when a retry inspected the new program), so the target is the new image's
 * and stays; taking it back would make one lifetime two. */
static void test_exec_recorded_before_the_inspection_keeps_the_target(void **state)
{
	struct discover *d = new_discover((struct discover_opts){ .subprocesses = true });
	struct pw_proc_rec r;
	char why[128];
	uint32_t id;

	(void)state;
	spawn(100, SHELL);
	assert_int_equal(discover__add_pid(d, 100, why, sizeof(why)), 0);
	r = hook_exec(proc(100));
	r.time_ns = 999 * MS;
	proc(100)->img = PY311;
	w.now = 1 * SEC;
	discover__tick(d, 1 * SEC); /* the slow retry finds the new program */
	id = id_of(d, 100);
	deliver(d, r, 1 * SEC + 1 * MS);
	assert_int_equal(id_of(d, 100), id);
	assert_int_equal(w.counts[C_ENDED], 0);
	assert_int_equal(w.counts[C_DETACH], 0);
	assert_kernel_agrees(d);
	discover__free(d);
}

/* ---- a launched command -------------------------------------------------------------- */

static void test_launched_shell_keeps_its_children_followed(void **state)
{
	struct discover *d = new_discover((struct discover_opts){ .launched = true });

	(void)state;
	spawn(100, SHELL); /* held before its exec: still pywalk's image */
	assert_int_equal(discover__add_launched(d, 100), 0);
	assert_int_equal(last_call(C_FOLLOW, 100)->arg, DISCOVER_FOLLOW_CHILDREN);
	assert_int_equal(discover__nwatched(d), 1);
	exec_proc(d, 100, SHELL, 1 * MS);
	assert_int_equal(ncalls(C_FOLLOW, 100), 1); /* still CHILDREN */
	fork_proc(d, 100, 101, SHELL, false, 2 * MS);
	exec_proc(d, 101, PY311, 3 * MS);
	assert_non_null(target_of(d, 101));
	exit_proc(d, 101, 4 * MS);
	exit_proc(d, 100, 5 * MS);
	assert_int_equal(stats(d)->not_python, 1);
	assert_int_equal(discover__nwatched(d), 0);
	discover__free(d);
}

static void test_launched_python_command_follows_only_its_own_execs(void **state)
{
	struct discover *d = new_discover((struct discover_opts){ .launched = true });

	(void)state;
	spawn(100, SHELL);
	assert_int_equal(discover__add_launched(d, 100), 0);
	exec_proc(d, 100, PY311, 1 * MS);
	assert_non_null(target_of(d, 100));
	assert_int_equal(last_call(C_FOLLOW, 100)->arg, DISCOVER_FOLLOW_EXEC);
	discover__free(d);
}

static void test_launched_python_command_keeps_children_with_subprocesses(void **state)
{
	struct discover *d =
		new_discover((struct discover_opts){ .launched = true, .subprocesses = true });

	(void)state;
	spawn(100, SHELL);
	assert_int_equal(discover__add_launched(d, 100), 0);
	exec_proc(d, 100, PY311, 1 * MS);
	assert_non_null(target_of(d, 100));
	assert_int_equal(ncalls(C_FOLLOW, 100), 1);
	assert_int_equal(last_call(C_FOLLOW, 100)->arg, DISCOVER_FOLLOW_CHILDREN);
	discover__free(d);
}

/* A python3 that links libpython.so: at its exec record the loader has not mapped the
 * library yet, and the command turns out to be Python on a retry. */
static void test_launched_python_found_on_a_retry_follows_only_its_own_execs(void **state)
{
	struct discover *d = new_discover((struct discover_opts){ .launched = true });

	(void)state;
	spawn(100, SHELL);
	assert_int_equal(discover__add_launched(d, 100), 0);
	exec_proc(d, 100, LOADING, 1 * MS);
	assert_null(target_of(d, 100));
	proc(100)->img = PY312;
	discover__tick(d, 10 * MS);
	assert_non_null(target_of(d, 100));
	assert_int_equal(last_call(C_FOLLOW, 100)->arg, DISCOVER_FOLLOW_EXEC);
	discover__free(d);
}

/* ---- --all --------------------------------------------------------------------------- */

static void test_all_takes_every_python_process_and_rescans_after_30_s(void **state)
{
	struct discover *d = new_discover((struct discover_opts){ .all = true });
	uint64_t next;

	(void)state;
	spawn(10, PY311);
	spawn(11, SHELL);
	spawn(12, PY312);
	assert_int_equal(discover__scan(d, 0), 0);
	assert_int_equal(w.nlist, 1);
	assert_int_equal(discover__nactive(d), 2);
	assert_int_equal(discover__nwatched(d), 1); /* may load an interpreter later */
	/* a Python process no event told of (its parent was not followed, events lost) */
	spawn(13, PY311);
	next = discover__tick(d, 1 * SEC);
	assert_true(next <= 30 * SEC);
	assert_int_equal(w.nlist, 1);
	discover__tick(d, 29 * SEC);
	assert_int_equal(w.nlist, 1);
	assert_null(target_of(d, 13));
	discover__tick(d, 30 * SEC);
	assert_int_equal(w.nlist, 2);
	assert_non_null(target_of(d, 13));
	/* what is known already is not inspected again by the rescan */
	assert_int_equal(proc(10)->ninspect, 1);
	assert_int_equal(proc(12)->ninspect, 1);
	assert_true(discover__tick(d, 30 * SEC) <= 60 * SEC);
	assert_kernel_agrees(d);
	discover__free(d);
}

static void test_all_scan_that_cannot_list_processes_fails(void **state)
{
	struct discover *d = new_discover((struct discover_opts){ .all = true });

	(void)state;
	w.list_err = -EMFILE;
	assert_int_equal(discover__scan(d, 0), -EMFILE);
	discover__free(d);
}

static void test_skipped_processes_are_counted_by_reason(void **state)
{
	struct discover *d = new_discover((struct discover_opts){ .all = true });

	(void)state;
	spawn(10, (struct image){ .err = -EPERM });
	spawn(11, (struct image){ .err = -EACCES });
	spawn(12, (struct image){ .err = -ENOTSUP, .free_threaded = true });
	spawn(13, (struct image){ .err = -ENOTSUP });
	spawn(14, PY311)->attach_err = -E2BIG;
	spawn(15, (struct image){ .err = -EIO });
	spawn(16, PY311)->attach_err = -EINVAL;
	spawn(17, PY312);
	assert_int_equal(discover__scan(d, 0), 0);
	assert_int_equal(stats(d)->skipped[DISCOVER_SKIP_PERMISSION], 2);
	assert_int_equal(stats(d)->skipped[DISCOVER_SKIP_FREE_THREADED], 1);
	assert_int_equal(stats(d)->skipped[DISCOVER_SKIP_UNSUPPORTED], 1);
	assert_int_equal(stats(d)->skipped[DISCOVER_SKIP_MAP_FULL], 1);
	assert_int_equal(stats(d)->skipped[DISCOVER_SKIP_ERROR], 2);
	assert_int_equal(discover__nactive(d), 1);
	assert_int_equal(discover__nwatched(d), 0);
	assert_string_equal(discover_skip_label(DISCOVER_SKIP_FREE_THREADED),
			    "free-threaded build");
	assert_string_equal(discover_skip_label(DISCOVER_SKIP__COUNT), "?");
	assert_kernel_agrees(d);
	discover__free(d);
}

/* --all lists /proc again every 30 s for what no event told of: a process it cannot
 * sample is counted (and noted) once, not at every rescan, until it execs or exits. */
static void test_skipped_process_is_counted_once_across_rescans(void **state)
{
	struct discover *d = new_discover((struct discover_opts){ .all = true });

	(void)state;
	spawn(10, (struct image){ .err = -EPERM });
	spawn(11, PY311)->attach_err = -E2BIG;
	assert_int_equal(discover__scan(d, 0), 0);
	for (int i = 1; i <= 4; i++)
		discover__tick(d, i * 30 * SEC);
	assert_int_equal(w.nlist, 5);
	assert_int_equal(stats(d)->skipped[DISCOVER_SKIP_PERMISSION], 1);
	assert_int_equal(stats(d)->skipped[DISCOVER_SKIP_MAP_FULL], 1);
	assert_int_equal(ncalls(C_NOTE, 10), 1);
	/* it is still looked at: with room in the map again, the next rescan takes it */
	proc(11)->attach_err = 0;
	discover__tick(d, 150 * SEC);
	assert_non_null(target_of(d, 11));
	/* a new program is another decision, and so is another process given the PID */
	exec_proc(d, 10, (struct image){ .err = -ENOTSUP }, 151 * SEC);
	assert_int_equal(stats(d)->skipped[DISCOVER_SKIP_UNSUPPORTED], 1);
	exit_proc(d, 10, 152 * SEC);
	spawn(10, (struct image){ .err = -EPERM });
	discover__tick(d, 180 * SEC);
	assert_int_equal(stats(d)->skipped[DISCOVER_SKIP_PERMISSION], 2);
	/* even when no event told of the exit */
	proc(10)->alive = false;
	spawn(10, (struct image){ .err = -EPERM });
	discover__tick(d, 210 * SEC);
	assert_int_equal(stats(d)->skipped[DISCOVER_SKIP_PERMISSION], 3);
	discover__tick(d, 240 * SEC);
	assert_int_equal(stats(d)->skipped[DISCOVER_SKIP_PERMISSION], 3);
	assert_int_equal(stats(d)->skipped[DISCOVER_SKIP_UNSUPPORTED], 1);
	discover__free(d);
}

static void test_named_pid_without_room_says_so(void **state)
{
	struct discover *d = new_discover((struct discover_opts){ 0 });
	char why[128];

	(void)state;
	spawn(100, PY311)->attach_err = -E2BIG;
	assert_int_equal(discover__add_pid(d, 100, why, sizeof(why)), -E2BIG);
	assert_non_null(strstr(why, "too many processes"));
	assert_int_equal(stats(d)->skipped[DISCOVER_SKIP_MAP_FULL], 1);
	discover__free(d);
}

/* Retries remove entries from the list they walk: every due process is tried once. */
static void test_tick_retries_every_due_process_once_while_some_become_targets(void **state)
{
	struct discover *d = new_discover((struct discover_opts){ .subprocesses = true });
	char why[128];

	(void)state;
	spawn(100, SHELL);
	assert_int_equal(discover__add_pid(d, 100, why, sizeof(why)), 0);
	for (pid_t pid = 200; pid < 264; pid++) {
		fork_proc(d, 100, pid, SHELL, false, 0);
		exec_proc(d, pid, LOADING, 0);
	}
	assert_int_equal(discover__nwatched(d), 65);
	for (pid_t pid = 200; pid < 264; pid++)
		if (pid % 3)
			proc(pid)->img = PY311;
	discover__tick(d, 1 * MS);
	for (pid_t pid = 200; pid < 264; pid++) {
		assert_int_equal(proc(pid)->ninspect, 2);
		assert_true(!(pid % 3) == !target_of(d, pid));
	}
	assert_int_equal(discover__nactive(d) + discover__nwatched(d), 65);
	assert_kernel_agrees(d);
	discover__free(d);
}

/* ---- memory follows the processes alive ---------------------------------------------- */

static void test_processes_that_come_and_go_leave_no_state(void **state)
{
	struct discover *d = new_discover((struct discover_opts){ .subprocesses = true });
	uint64_t now = 0;
	char why[128];

	(void)state;
	spawn(1, PY311);
	assert_int_equal(discover__add_pid(d, 1, why, sizeof(why)), 0);
	for (int round = 0; round < 2000; round++) {
		pid_t a = 2 + (round * 7) % 1000, b = 1002 + (round * 13) % 1000;

		now += 3 * MS;
		/* a fork of the Python target that execs into something else */
		fork_proc(d, 1, a, PY311, false, now);
		if (round % 2)
			exec_proc(d, a, round % 4 == 1 ? PY312 : SHELL, now + 1 * MS);
		/* and one that execs a Python whose libpython is mapped a moment later */
		fork_proc(d, 1, b, PY311, false, now);
		exec_proc(d, b, LOADING, now + 1 * MS);
		if (round % 3)
			proc(b)->img = PY312;
		discover__tick(d, now + 2 * MS);
		if (round % 5 == 0) {
			now += 3 * SEC;
			discover__tick(d, now);
		}
		exit_proc(d, a, now + 2 * MS);
		exit_proc(d, b, now + 2 * MS);
		assert_kernel_agrees(d);
	}
	assert_int_equal(discover__nactive(d), 1);
	assert_int_equal(discover__nwatched(d), 0);
	exit_proc(d, 1, now + 3 * MS);
	assert_int_equal(discover__nactive(d), 0);
	assert_int_equal(discover__nwatched(d), 0);
	assert_int_equal(w.nopen, 0); /* every target that began ended */
	assert_int_equal(w.counts[C_BEGAN], stats(d)->targets);
	assert_int_equal(discover__tick(d, now + 4 * MS), UINT64_MAX);
	assert_kernel_agrees(d);
	discover__free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup(name, reset)
		T(test_named_python_pid_becomes_a_target_whose_execs_are_followed),
		T(test_named_pid_that_is_not_python_is_an_error),
		T(test_named_non_python_pid_is_watched_when_its_subprocesses_are_followed),
		T(test_named_pid_that_is_gone_is_an_error_and_not_counted_as_a_skip),
		T(test_fork_child_of_a_target_inherits_its_config_with_the_kernel_id),
		T(test_fork_child_takes_its_namespace_pid_from_the_ops),
		T(test_fork_child_without_room_in_the_map_is_counted_as_map_full),
		T(test_fork_child_of_an_unknown_parent_is_inspected_afresh),
		T(test_fork_child_that_exited_at_once_is_detached_not_a_target),
		T(test_exec_of_a_target_ends_it_and_a_python_image_gets_a_new_id),
		T(test_exec_into_a_non_python_image_is_retried_fast_then_slowly),
		T(test_exec_of_a_program_that_links_libpython_finds_it_on_a_fast_retry),
		T(test_every_exec_restarts_the_fast_schedule),
		T(test_libpython_that_never_maps_falls_back_to_the_slow_schedule),
		T(test_unreadable_interpreter_is_retried_soon_and_not_counted),
		T(test_exit_ends_the_target_and_drops_its_watch),
		T(test_reused_pid_gets_a_new_target_id),
		T(test_process_replaced_before_attach_is_detached_and_not_a_target),
		T(test_exit_seen_before_attach_leaves_no_config_behind),
		T(test_exec_seen_before_attach_ends_the_old_image),
		T(test_exec_recorded_before_the_inspection_keeps_the_target),
		T(test_launched_shell_keeps_its_children_followed),
		T(test_launched_python_command_follows_only_its_own_execs),
		T(test_launched_python_command_keeps_children_with_subprocesses),
		T(test_launched_python_found_on_a_retry_follows_only_its_own_execs),
		T(test_all_takes_every_python_process_and_rescans_after_30_s),
		T(test_all_scan_that_cannot_list_processes_fails),
		T(test_skipped_processes_are_counted_by_reason),
		T(test_skipped_process_is_counted_once_across_rescans),
		T(test_named_pid_without_room_says_so),
		T(test_tick_retries_every_due_process_once_while_some_become_targets),
		T(test_processes_that_come_and_go_leave_no_state),
#undef T
	};

	return cmocka_run_group_tests_name("discover", tests, NULL, NULL);
}
