// SPDX-License-Identifier: MIT
/* pywalk dump: pause, read every thread state, walk, resume (dump.h). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pystate/dump.h"
#include "inspect/proc.h"

/* The walker reads the target through this; one dump at a time. */
static pid_t reading_pid;

static int read_target(void *dst, uint32_t size, uint64_t addr)
{
	return proc_read_mem(reading_pid, addr, dst, size);
}

#define PW_READ_USER(dst, size, addr) read_target((dst), (size), (addr))
#include "walk.h"
#include "gil.h"

#define MAX_THREADS 4096
/* offsetof(struct pthread, tid) in glibc on x86-64 (stable since 2.x; checked against the
 * process's own thread list before it is believed) */
#define GLIBC_PTHREAD_TID_OFFSET 0x2d0
/* Not paused: reads of every thread state until none moved under the walk. */
#define NONBLOCKING_ATTEMPTS 20
#define NONBLOCKING_SPACING_US 10000

struct task_list {
	pid_t tids[MAX_THREADS];
	size_t n;
	/* state and wait channel of each, read before the pause (which would show as
	 * "stopped in ptrace_stop") */
	char state[MAX_THREADS];
	char wchan[MAX_THREADS][64];
};

static int list_tasks(pid_t pid, struct task_list *l)
{
	char path[64];
	DIR *d;
	struct dirent *e;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return -errno;
	l->n = 0;
	while ((e = readdir(d))) {
		long tid = strtol(e->d_name, NULL, 10);

		if (tid <= 0)
			continue;
		if (l->n == MAX_THREADS) {
			closedir(d);
			return -E2BIG;
		}
		l->tids[l->n++] = (pid_t)tid;
	}
	closedir(d);
	return 0;
}

static void too_many_threads(pid_t pid, char *why, size_t why_size)
{
	snprintf(why, why_size, "PID %d has more than %d threads, the most pywalk dump handles",
		 pid, MAX_THREADS);
}

static bool listed(const struct task_list *l, pid_t tid)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->tids[i] == tid)
			return true;
	return false;
}

/* State letter and wait channel of one thread, from /proc. */
static void read_task_state(pid_t pid, pid_t tid, char *state, char *wchan, size_t wchan_size)
{
	char path[96];
	FILE *f;

	*state = proc_read_task_state(pid, tid);
	snprintf(path, sizeof(path), "/proc/%d/task/%d/wchan", pid, tid);
	f = fopen(path, "re");
	if (f) {
		size_t n = fread(wchan, 1, wchan_size - 1, f);

		wchan[n] = 0;
		if (!strcmp(wchan, "0"))
			wchan[0] = 0;
		fclose(f);
	}
}

static void read_task_states(pid_t pid, struct task_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		l->state[i] = 0;
		l->wchan[i][0] = 0;
		read_task_state(pid, l->tids[i], &l->state[i], l->wchan[i], sizeof(l->wchan[i]));
	}
}

/* Seize and stop every thread, again until no new thread appeared meanwhile. */
static int pause_all(pid_t pid, struct task_list *held, char *why, size_t why_size)
{
	static struct task_list now;
	bool grew = true;
	int err;

	held->n = 0;
	while (grew) {
		grew = false;
		err = list_tasks(pid, &now);
		if (!err)
			read_task_states(pid, &now);
		if (err == -E2BIG) {
			too_many_threads(pid, why, why_size);
			return err;
		}
		if (err) {
			snprintf(why, why_size, "cannot list the threads of PID %d: %s", pid,
				 strerror(-err));
			return err;
		}
		for (size_t i = 0; i < now.n; i++) {
			int st;

			if (listed(held, now.tids[i]))
				continue;
			/* new threads can keep coming (an execve replaces the held ones by new
			 * ones): held is full, the caller resumes what it holds */
			if (held->n == MAX_THREADS) {
				too_many_threads(pid, why, why_size);
				return -E2BIG;
			}
			if (ptrace(PTRACE_SEIZE, now.tids[i], 0, 0)) {
				if (errno == ESRCH)
					continue; /* the thread ended */
				err = -errno;
				snprintf(
					why, why_size,
					"cannot pause PID %d: %s (is it being traced already, by a "
					"debugger or another profiler? --nonblocking reads it without "
					"pausing)",
					pid, strerror(errno));
				return err;
			}
			held->state[held->n] = now.state[i];
			memcpy(held->wchan[held->n], now.wchan[i], sizeof(held->wchan[0]));
			held->tids[held->n++] = now.tids[i];
			grew = true;
			if (ptrace(PTRACE_INTERRUPT, now.tids[i], 0, 0) == 0)
				waitpid(now.tids[i], &st, __WALL);
		}
	}
	return 0;
}

static void resume_all(const struct task_list *held)
{
	for (size_t i = 0; i < held->n; i++)
		ptrace(PTRACE_DETACH, held->tids[i], 0, 0);
}

/* The tid a thread state's id stands for: gettid() in the process's namespace (3.11+), or
 * pthread_self(), glibc's TCB address, which is the thread's fs base (3.10, paused only). */
static pid_t tid_of(const struct dump *d, const struct task_list *tasks, uint64_t id,
		    const struct pw_proc *cfg)
{
	for (size_t i = 0; i < tasks->n; i++) {
		pid_t tid = tasks->tids[i];

		if (cfg->thread_match == PW_MATCH_NATIVE_TID) {
			pid_t ns = d->t.own_pidns ? proc_read_nspid(tid) : tid;

			if (ns > 0 && (uint64_t)ns == id)
				return tid;
			continue;
		}
#if defined(__x86_64__)
		if (d->paused) {
			struct user_regs_struct regs;

			if (!ptrace(PTRACE_GETREGS, tid, 0, &regs) && regs.fs_base == id)
				return tid;
		}
#endif
	}
	if (cfg->thread_match == PW_MATCH_PTHREAD) {
		/* not paused: glibc's struct pthread holds the kernel tid; taken only when it
		 * names one of this process's threads */
		uint32_t tid = 0;

		if (!read_target(&tid, sizeof(tid), id + GLIBC_PTHREAD_TID_OFFSET))
			for (size_t i = 0; i < tasks->n; i++)
				if ((uint32_t)tasks->tids[i] == tid)
					return (pid_t)tid;
	}
	return 0;
}

/* Whether a thread ran between two looks: its state and how many times it has been put on
 * a CPU (schedstat's third field). */
struct run_mark {
	char state;
	uint64_t slices;
};

static bool run_mark(pid_t pid, pid_t tid, struct run_mark *m)
{
	char path[96];
	unsigned long long run, wait, slices;
	FILE *f;
	int n;

	m->state = proc_read_task_state(pid, tid);
	snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", pid, tid);
	f = fopen(path, "re");
	if (!f)
		return false;
	n = fscanf(f, "%llu %llu %llu", &run, &wait, &slices);
	fclose(f);
	m->slices = slices;
	return n == 3 && m->state;
}

/* The walk's data-stack window and tag memory (one walk at a time). */
static struct pw_walkmem walk_mem;

/* Walk one thread state; its frames into t->frames. */
static void walk_thread(const struct pw_proc *cfg, uint64_t tstate, uint32_t max_depth,
			struct dump_thread *t)
{
	uint8_t ts[PW_TSTATE_READ_MAX] __attribute__((aligned(8))) = { 0 };
	uint32_t size = cfg->off.tstate_read_size;
	struct pw_walk w;
	__u64 current;

	t->nframes = 0;
	if (size > sizeof(ts))
		size = sizeof(ts);
	if (read_target(ts, size, tstate)) {
		t->outcome = PW_OUT_READ_FAULT;
		return;
	}
	t->gil = (uint16_t)pw_gil_flags(cfg, ts, tstate);
	t->outcome = pw_current_frame(cfg, ts, &current);
	if (t->outcome != PW_OUT__CONTINUE)
		return;
	pw_walk_start(&w, &walk_mem, cfg, ts, current, max_depth);
	for (uint32_t i = 0; i < pw_walk_bound(max_depth); i++) {
		int done = pw_walk_step(&w, cfg, &walk_mem);

		if (w.emit && w.nframes - 1 < max_depth)
			t->frames[w.nframes - 1] = w.cur;
		if (done)
			break;
	}
	t->outcome = w.outcome == PW_OUT__CONTINUE ? PW_OUT_DEPTH : w.outcome;
	t->nframes = w.nframes < max_depth ? w.nframes : max_depth;
}

/* One pass over every interpreter's thread list. */
static int read_threads(struct dump *d, const struct pw_proc *cfg, uint32_t max_depth,
			const struct task_list *tasks, char *why, size_t why_size)
{
	struct pw_tfind tf;
	uint64_t states[MAX_THREADS];
	size_t n = 0;
	int err;

	/* an id no thread has: the lookup visits every thread state */
	err = pw_tfind_init(&tf, cfg, ~0ull);
	if (err)
		return err;
	for (unsigned int guard = 0; guard < MAX_THREADS * 2 + PW_MAX_INTERPRETERS; guard++) {
		uint64_t here = tf.tstate;

		if (here && (!n || states[n - 1] != here)) {
			/* more than the threads it may have: a thread list that loops, or lies */
			if (n == MAX_THREADS) {
				snprintf(
					why, why_size,
					"PID %d has more than %d thread states, the most pywalk dump "
					"handles",
					d->t.pid, MAX_THREADS);
				return -E2BIG;
			}
			states[n++] = here;
		}
		if (pw_tfind_step(&tf, cfg))
			break;
	}
	if (tf.err)
		return tf.err;
	for (size_t i = 0; i < d->nthreads; i++)
		free(d->threads[i].frames);
	free(d->threads);
	d->nthreads = 0;
	d->threads = calloc(n ? n : 1, sizeof(*d->threads));
	if (!d->threads)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct dump_thread *t = &d->threads[d->nthreads++];
		uint8_t id[8] = { 0 };

		t->frames = calloc(max_depth, sizeof(*t->frames));
		if (!t->frames)
			return -ENOMEM;
		if (read_target(id, cfg->thread_match == PW_MATCH_NATIVE_TID ? 4 : 8,
				states[i] + cfg->off.tstate_thread_id) == 0)
			memcpy(&t->thread_id, id, sizeof(t->thread_id));
		t->tid = tid_of(d, tasks, t->thread_id, cfg);
		for (size_t k = 0; t->tid && k < tasks->n; k++) {
			if (tasks->tids[k] != t->tid)
				continue;
			t->state = tasks->state[k];
			memcpy(t->wchan, tasks->wchan[k], sizeof(t->wchan));
		}
		if (t->tid)
			proc_read_comm(d->t.pid, t->tid, t->name, sizeof(t->name));
		if (d->paused) {
			walk_thread(cfg, states[i], max_depth, t);
			continue;
		}
		/* not paused: only a thread that did not run while it was read has a stack of
		 * one instant; one that ran (or may have: it is on a CPU) is rejected, and read
		 * again by the next attempt */
		{
			struct run_mark before, after;
			bool ok = t->tid && run_mark(d->t.pid, t->tid, &before);

			walk_thread(cfg, states[i], max_depth, t);
			ok = ok && run_mark(d->t.pid, t->tid, &after) && before.state != 'R' &&
			     after.state != 'R' && before.slices == after.slices;
			/* whatever the walk made of a moving stack (a "bad frame" as often as a
			 * stack), the reason is that it moved */
			if (!ok && t->outcome != PW_OUT_EMPTY) {
				t->outcome = PW_OUT_TORN;
				t->moved = true;
				t->nframes = 0;
			}
		}
	}
	return 0;
}

/* Fold attempt `d` into `best`: threads new to best are added; a thread best has without a
 * stack takes d's if d's is one. The frames move (d's entry is left without them). */
static int keep_best(struct dump *best, struct dump *d)
{
	for (size_t i = 0; i < d->nthreads; i++) {
		struct dump_thread *t = &d->threads[i], *b = NULL;

		for (size_t j = 0; j < best->nthreads && !b; j++)
			if (best->threads[j].thread_id == t->thread_id)
				b = &best->threads[j];
		if (!b) {
			struct dump_thread *grown =
				realloc(best->threads, (best->nthreads + 1) * sizeof(*grown));

			if (!grown)
				return -ENOMEM;
			best->threads = grown;
			best->threads[best->nthreads++] = *t;
			t->frames = NULL;
		} else if (b->outcome != PW_OUT_SHIPPED && t->outcome == PW_OUT_SHIPPED) {
			free(b->frames);
			*b = *t;
			t->frames = NULL;
		}
	}
	return 0;
}

static bool any_torn(const struct dump *d)
{
	for (size_t i = 0; i < d->nthreads; i++)
		if (d->threads[i].outcome == PW_OUT_TORN ||
		    d->threads[i].outcome == PW_OUT_READ_FAULT)
			return true;
	return false;
}

/* Python thread names, matched to the threads by native id (in the target's namespace). */
static void read_names(struct dump *d)
{
	struct pythreads_src src;
	struct pythread_name *names = calloc(PYTHREADS_MAX, sizeof(*names));

	if (!names) {
		d->names_err = -ENOMEM;
		return;
	}
	pythreads_src_of(&d->t, &src);
	d->names_err = pythreads_read(&src, names, PYTHREADS_MAX, &d->names);
	for (size_t i = 0; !d->names_err && i < d->nthreads; i++) {
		struct dump_thread *t = &d->threads[i];
		pid_t ns = !t->tid ? 0 : d->t.own_pidns ? proc_read_nspid(t->tid) : t->tid;

		for (size_t j = 0; ns > 0 && j < d->names.named; j++)
			if (names[j].native_id == (uint32_t)ns)
				memcpy(t->pyname, names[j].name, sizeof(t->pyname));
	}
	free(names);
}

/* Every asyncio task; the task reader has its own reads, so the walker's target is set
 * again after it. */
static int read_async(struct dump *d, uint32_t max_depth)
{
	int err = async_tasks_read(&d->t, max_depth, &d->aio);

	reading_pid = d->t.pid;
	d->async_read = !err;
	return err;
}

int dump_process(pid_t pid, const struct dump_opts *o, struct dump *d, char *why, size_t why_size)
{
	uint32_t max_depth = o->max_depth ? o->max_depth : PW_DEFAULT_MAX_DEPTH;
	struct task_list *tasks = calloc(1, sizeof(*tasks));
	struct pw_proc cfg;
	int err;

	memset(d, 0, sizeof(*d));
	if (!tasks)
		return -ENOMEM;
	err = target_inspect(pid, NULL, &d->t, NULL, why, why_size);
	if (err)
		goto out;
	if (!d->t.initialized) {
		snprintf(why, why_size, "PID %d: its interpreter is not initialized yet", pid);
		err = -EAGAIN;
		goto out;
	}
	if (o->async && !d->t.ver.aio.present) {
		/* refused before the process is paused: there is nothing it could show */
		d->async_refused = true;
		snprintf(why, why_size,
			 "dump --async: PID %d runs Python %u.%u, which has no asyncio task table "
			 "(3.14+)",
			 pid, d->t.ver.major, d->t.ver.minor);
		err = -ENOTSUP;
		goto out;
	}
	cfg = target_config(&d->t);
	reading_pid = pid;
	if (!o->nonblocking) {
		err = pause_all(pid, tasks, why, why_size);
		if (err) {
			resume_all(tasks);
			goto out;
		}
		d->paused = true;
		d->attempts = 1;
		err = read_threads(d, &cfg, max_depth, tasks, why, why_size);
		if (!err) /* while paused, the dicts cannot change under the read */
			read_names(d);
		if (!err && o->async)
			err = read_async(d, max_depth);
		resume_all(tasks);
	} else {
		err = list_tasks(pid, tasks);
		if (err == -E2BIG)
			too_many_threads(pid, why, why_size);
		if (!err)
			read_task_states(pid, tasks);
		struct dump best = { 0 };

		/* attempts 10 ms apart, so that a thread busy for a while is caught asleep by
		 * one of them; each thread keeps the first stack it had of one instant */
		for (unsigned int i = 0; !err && i < NONBLOCKING_ATTEMPTS; i++) {
			d->attempts = i + 1;
			if (i)
				usleep(NONBLOCKING_SPACING_US);
			err = read_threads(d, &cfg, max_depth, tasks, why, why_size);
			if (!err)
				err = keep_best(&best, d);
			if (!err && !any_torn(&best))
				break;
		}
		for (size_t i = 0; i < d->nthreads; i++)
			free(d->threads[i].frames);
		free(d->threads);
		d->threads = best.threads;
		d->nthreads = best.nthreads;
		if (!err)
			read_names(d);
		if (!err && o->async)
			err = read_async(d, max_depth);
	}
	if (err && !why[0])
		snprintf(why, why_size, "cannot read the thread states of PID %d: %s", pid,
			 strerror(-err));
out:
	free(tasks);
	return err;
}

void dump_free(struct dump *d)
{
	async_tasks_free(&d->aio);
	for (size_t i = 0; i < d->nthreads; i++)
		free(d->threads[i].frames);
	free(d->threads);
	memset(d, 0, sizeof(*d));
}

int dump_thread_record(const struct target *t, pid_t tid, uint32_t max_depth, uint64_t time_ns,
		       void *buf, size_t size)
{
	struct pw_proc cfg = target_config(t);
	struct pw_sample_hdr *h = buf;
	struct dump d = { .t = *t };
	struct task_list *tasks = calloc(1, sizeof(*tasks));
	struct pw_tfind tf;
	int err, len = 0;

	if (!tasks)
		return -ENOMEM;
	if (!max_depth)
		max_depth = PW_DEFAULT_MAX_DEPTH;
	reading_pid = t->pid;
	tasks->tids[0] = tid;
	tasks->n = 1;
	err = pw_tfind_init(&tf, &cfg, ~0ull);
	for (unsigned int guard = 0; !err && guard < MAX_THREADS * 2 + PW_MAX_INTERPRETERS;
	     guard++) {
		uint64_t here = tf.tstate, id = 0;
		struct dump_thread th = { 0 };

		if (here &&
		    !read_target(&id, cfg.thread_match == PW_MATCH_NATIVE_TID ? 4 : 8,
				 here + cfg.off.tstate_thread_id) &&
		    tid_of(&d, tasks, id, &cfg) == tid) {
			uint32_t n = max_depth;
			struct run_mark before, after;

			if (sizeof(*h) + (size_t)n * sizeof(struct pw_frame) > size)
				n = (uint32_t)((size - sizeof(*h)) / sizeof(struct pw_frame));
			th.frames = (struct pw_frame *)(h + 1);
			if (!run_mark(t->pid, tid, &before))
				break;
			walk_thread(&cfg, here, n, &th);
			/* a stack of one instant only if the thread did not run meanwhile */
			if (th.outcome != PW_OUT_SHIPPED || !run_mark(t->pid, tid, &after) ||
			    before.state == 'R' || after.state == 'R' ||
			    before.slices != after.slices)
				break;
			/* asleep, as the kernel would have said at its switch-out */
			uint16_t block = before.state == 'D' ? PW_BLOCK_IO : PW_BLOCK_SLEEP;

			*h = (struct pw_sample_hdr){
				.kind = PW_REC_SAMPLE,
				.nframes = (uint16_t)th.nframes,
				.flags = (uint16_t)(th.gil | block << PW_SF_BLOCK_SHIFT),
				.time_ns = time_ns,
				.tstate = here,
				.pid = (__u32)t->pid,
				.tid = (__u32)tid,
				.target = t->id,
				.probe = PW_PROBE_OFFCPU
			};
			len = (int)(sizeof(*h) + th.nframes * sizeof(struct pw_frame));
			break;
		}
		if (pw_tfind_step(&tf, &cfg))
			break;
	}
	free(tasks);
	return err ? err : len;
}
