// SPDX-License-Identifier: MIT
/* The discovery state machine. Targets (processes sampled now) are indexed by target id
 * and by PID; watched processes (followed, not Python yet: a shell, a program before its
 * libpython is mapped, an embedder that may dlopen one) are retried on a backed-off
 * schedule. Everything of a process is dropped when it exits, so memory follows the
 * processes alive, not the processes seen. */
#include <errno.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "engine/discover.h"
#include "lib/htab.h"
#include "lib/util.h"

#define MS (1000000ull)
/* Retries after an exec or of a program that links a libpython not mapped yet: the
 * dynamic loader maps it within milliseconds, and a short-lived program is gone soon. */
static const uint64_t fast_backoff_ns[] = { 1 * MS,  2 * MS,  4 * MS,	8 * MS,	  16 * MS,
					    32 * MS, 64 * MS, 128 * MS, 256 * MS, 512 * MS };
/* Then, for an interpreter an embedder may dlopen at any time. */
static const uint64_t slow_backoff_ns[] = { 1000 * MS, 5000 * MS, 30000 * MS, 120000 * MS,
					    300000 * MS };
/* --all: how often /proc is listed for processes no event told us of (lost events,
 * processes forked by non-followed parents that loaded Python without an exec). */
#define RESCAN_NS (30000 * MS)

struct watch {
	pid_t pid;
	uint64_t next_ns;
	uint32_t attempts;
	bool fast;
	bool fast_spent; /* this program had its fast schedule: the slow one from now on */
};

/* What a watched process's next retry waits for. */
enum retry {
	RETRY_KEEP, /* nothing new: the schedule it is on (the slow one for a new watch) */
	RETRY_SOON, /* a libpython is on its way: the fast schedule, once per program */
	RETRY_EXEC, /* a new program: the fast schedule from its start */
};

/* A process looked at and not sampled (a skip) under --all, so it is counted once however
 * often the rescans look at it again (an attach may find room later); its exec and exit
 * forget it, and so does a rescan that no longer lists it (an exit record was lost).
 * Without --all nothing looks at a process twice but its own exec. */
struct skipped {
	pid_t pid;
	uint64_t start_ticks; /* the lifetime it was counted for */
	bool listed;	      /* seen by the rescan under way */
};

struct discover {
	struct discover_opts opts;
	struct discover_ops ops;

	struct target *targets; /* active only; ended ones are dropped */
	size_t ntargets, targets_cap;
	struct htab by_id, by_pid;

	struct watch *watch;
	size_t nwatch, watch_cap;
	struct htab watch_by_pid;

	struct skipped *skipped;
	size_t nskipped, skipped_cap;
	struct htab skipped_by_pid;

	uint32_t next_id;
	pid_t launched;
	uint64_t next_rescan_ns;
	struct discover_stats stats;
};

static const char *const skip_labels[] = {
#define DISCOVER_X_LABEL(name, label, id) label,
	DISCOVER_SKIPS(DISCOVER_X_LABEL)
#undef DISCOVER_X_LABEL
};

static const char *const skip_ids[] = {
#define DISCOVER_X_ID(name, label, id) id,
	DISCOVER_SKIPS(DISCOVER_X_ID)
#undef DISCOVER_X_ID
};

const char *discover_skip_label(enum discover_skip s)
{
	return s < DISCOVER_SKIP__COUNT ? skip_labels[s] : "?";
}

const char *discover_skip_id(enum discover_skip s)
{
	return s < DISCOVER_SKIP__COUNT ? skip_ids[s] : "unknown";
}

struct discover *discover__new(const struct discover_opts *opts, const struct discover_ops *ops)
{
	struct discover *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->opts = *opts;
	d->ops = *ops;
	d->next_id = 1;
	return d;
}

void discover__free(struct discover *d)
{
	if (!d)
		return;
	free(d->targets);
	htab_free(&d->by_id);
	htab_free(&d->by_pid);
	free(d->watch);
	htab_free(&d->watch_by_pid);
	free(d->skipped);
	htab_free(&d->skipped_by_pid);
	free(d);
}

/* ---- indexes ------------------------------------------------------------------------- */

static bool id_eq(uint32_t i, const void *key, void *ctx)
{
	const struct discover *d = ctx;

	return d->targets[i].id == *(const uint32_t *)key;
}

static bool pid_eq(uint32_t i, const void *key, void *ctx)
{
	const struct discover *d = ctx;

	return d->targets[i].pid == *(const pid_t *)key;
}

static bool watch_eq(uint32_t i, const void *key, void *ctx)
{
	const struct discover *d = ctx;

	return d->watch[i].pid == *(const pid_t *)key;
}

static bool skipped_eq(uint32_t i, const void *key, void *ctx)
{
	const struct discover *d = ctx;

	return d->skipped[i].pid == *(const pid_t *)key;
}

static struct target *by_id(const struct discover *d, uint32_t id)
{
	uint32_t i;

	if (!htab_find(&d->by_id, hash_mix64(id), id_eq, &id, (void *)d, &i))
		return NULL;
	return &d->targets[i];
}

static struct target *by_pid(const struct discover *d, pid_t pid)
{
	uint32_t i;

	if (!htab_find(&d->by_pid, hash_mix64((uint32_t)pid), pid_eq, &pid, (void *)d, &i))
		return NULL;
	return &d->targets[i];
}

static struct watch *watched(const struct discover *d, pid_t pid)
{
	uint32_t i;

	if (!htab_find(&d->watch_by_pid, hash_mix64((uint32_t)pid), watch_eq, &pid, (void *)d, &i))
		return NULL;
	return &d->watch[i];
}

static int index_target(struct discover *d, uint32_t i)
{
	int err = htab_insert(&d->by_id, hash_mix64(d->targets[i].id), i);

	if (!err)
		err = htab_insert(&d->by_pid, hash_mix64((uint32_t)d->targets[i].pid), i);
	if (err)
		htab_remove(&d->by_id, hash_mix64(d->targets[i].id), i);
	return err;
}

static void unindex_target(struct discover *d, uint32_t i)
{
	htab_remove(&d->by_id, hash_mix64(d->targets[i].id), i);
	htab_remove(&d->by_pid, hash_mix64((uint32_t)d->targets[i].pid), i);
}

static void drop_target(struct discover *d, struct target *t)
{
	uint32_t i = (uint32_t)(t - d->targets), last = (uint32_t)d->ntargets - 1;

	unindex_target(d, i);
	if (i != last) {
		unindex_target(d, last);
		d->targets[i] = d->targets[last];
		index_target(d, i); /* cannot fail: the slots were just freed */
	}
	d->ntargets--;
}

/* Remove element i of an array of n elements of `size` bytes, indexed by the pid_t at
 * `pid_off` of each in `index`: the last element takes its place (and its index entry). */
static void remove_by_pid(struct htab *index, void *array, size_t size, size_t pid_off, size_t *n,
			  uint32_t i)
{
	uint8_t *a = array;
	uint32_t last = (uint32_t)*n - 1;
	pid_t pid;

	memcpy(&pid, a + (size_t)i * size + pid_off, sizeof(pid));
	htab_remove(index, hash_mix64((uint32_t)pid), i);
	if (i != last) {
		memcpy(&pid, a + (size_t)last * size + pid_off, sizeof(pid));
		htab_remove(index, hash_mix64((uint32_t)pid), last);
		memcpy(a + (size_t)i * size, a + (size_t)last * size, size);
		htab_insert(index, hash_mix64((uint32_t)pid), i); /* the slot was just freed */
	}
	(*n)--;
}

static void unwatch(struct discover *d, pid_t pid)
{
	struct watch *w = watched(d, pid);

	if (!w)
		return;
	remove_by_pid(&d->watch_by_pid, d->watch, sizeof(*d->watch), offsetof(struct watch, pid),
		      &d->nwatch, (uint32_t)(w - d->watch));
}

static struct skipped *skipped_of(const struct discover *d, pid_t pid)
{
	uint32_t i;

	if (!htab_find(&d->skipped_by_pid, hash_mix64((uint32_t)pid), skipped_eq, &pid, (void *)d,
		       &i))
		return NULL;
	return &d->skipped[i];
}

static void unskip(struct discover *d, pid_t pid)
{
	struct skipped *s = skipped_of(d, pid);

	if (!s)
		return;
	remove_by_pid(&d->skipped_by_pid, d->skipped, sizeof(*d->skipped),
		      offsetof(struct skipped, pid), &d->nskipped, (uint32_t)(s - d->skipped));
}

/* Count the skip of lifetime `start_ticks` of `pid`, unless it was counted already.
 * true when it is counted now. */
static bool count_skip(struct discover *d, pid_t pid, uint64_t start_ticks, enum discover_skip why)
{
	struct skipped *s;

	if (!d->opts.all) {
		d->stats.skipped[why]++;
		return true;
	}
	s = skipped_of(d, pid);
	if (s && s->start_ticks == start_ticks) {
		s->listed = true;
		return false;
	}
	unskip(d, pid); /* another lifetime of the PID */
	d->stats.skipped[why]++;
	/* without room it is only counted again at the next rescan */
	if (!grow_array((void **)&d->skipped, &d->skipped_cap, d->nskipped + 1,
			sizeof(*d->skipped)) &&
	    !htab_insert(&d->skipped_by_pid, hash_mix64((uint32_t)pid), (uint32_t)d->nskipped))
		d->skipped[d->nskipped++] =
			(struct skipped){ .pid = pid, .start_ticks = start_ticks, .listed = true };
	return true;
}

/* Retry `pid` later: soon after an exec or when a libpython is on its way, else slowly. A
 * program that stays "libpython on its way" (stopped right after its exec, a libpython
 * whose file cannot be opened) falls back to the slow schedule, and only its next exec
 * brings it back to the fast one. */
static int watch(struct discover *d, pid_t pid, enum retry how, uint64_t now_ns)
{
	struct watch *w = watched(d, pid);
	int err;

	if (!w) {
		err = grow_array((void **)&d->watch, &d->watch_cap, d->nwatch + 1,
				 sizeof(*d->watch));
		if (!err)
			err = htab_insert(&d->watch_by_pid, hash_mix64((uint32_t)pid),
					  (uint32_t)d->nwatch);
		if (err)
			return err;
		w = &d->watch[d->nwatch++];
		*w = (struct watch){ .pid = pid };
	}
	if (how == RETRY_EXEC || (how == RETRY_SOON && !w->fast && !w->fast_spent)) {
		w->fast = true;
		w->fast_spent = false;
		w->attempts = 0;
	}
	if (w->fast && w->attempts >= ARRAY_SIZE(fast_backoff_ns)) {
		w->fast = false;
		w->fast_spent = true;
		w->attempts = 0;
	}
	w->next_ns =
		now_ns + (w->fast ? fast_backoff_ns[w->attempts]
				  : slow_backoff_ns[w->attempts < ARRAY_SIZE(slow_backoff_ns)
							    ? w->attempts
							    : ARRAY_SIZE(slow_backoff_ns) - 1]);
	w->attempts++;
	return 0;
}

/* ---- targets -------------------------------------------------------------------------- */

static void end_target(struct discover *d, struct target *t, enum discover_end why)
{
	d->ops.ended(d->ops.ctx, t, why);
	drop_target(d, t);
}

static enum discover_skip skip_reason(const struct target *t, int err)
{
	if (err == -EPERM || err == -EACCES)
		return DISCOVER_SKIP_PERMISSION;
	if (err == -ENOTSUP)
		return t->ver.free_threaded ? DISCOVER_SKIP_FREE_THREADED
					    : DISCOVER_SKIP_UNSUPPORTED;
	if (err == -E2BIG)
		return DISCOVER_SKIP_MAP_FULL;
	return DISCOVER_SKIP_ERROR;
}

/* Make `t` (inspected, or inherited with its id set) an active target. 0, or a negative
 * errno when it could not be attached (counted). */
static int activate(struct discover *d, const struct target *t, bool attach)
{
	struct target *slot;
	uint64_t ticks = 0;
	int err;

	err = grow_array((void **)&d->targets, &d->targets_cap, d->ntargets + 1,
			 sizeof(*d->targets));
	if (err)
		return err;
	slot = &d->targets[d->ntargets];
	*slot = *t;
	if (attach) {
		err = d->ops.attach(d->ops.ctx, slot);
		if (err) {
			count_skip(d, slot->pid, slot->start_ticks, skip_reason(slot, err));
			return err;
		}
		/* it may have exited (and its PID been reused) between inspection and
		 * attach, when no exit event could remove the config: check its identity
		 * now that the config is in place, so the kernel's exit hook covers the rest */
		if (d->ops.start_time(d->ops.ctx, slot->pid, &ticks) ||
		    ticks != slot->start_ticks) {
			d->ops.detach(d->ops.ctx, slot->pid, slot->id);
			return -ESRCH;
		}
	}
	err = index_target(d, (uint32_t)d->ntargets);
	if (err) {
		if (attach)
			d->ops.detach(d->ops.ctx, slot->pid, slot->id);
		return err;
	}
	d->ntargets++;
	d->stats.targets++;
	unskip(d, slot->pid);
	d->ops.began(d->ops.ctx, slot);
	return 0;
}

enum watch_mode {
	WATCH_NONE, /* not Python: an answer, not a reason to look again */
	WATCH_AUTO, /* look again, soon if a libpython is on its way */
	WATCH_FAST, /* look again soon (it just exec'd) */
};

/* Look at `pid` now. Returns 0 when it became a target, -ENOEXEC when it is not Python
 * (watched per `mode`), -EFAULT when its memory could not be read yet (watched, unless
 * WATCH_NONE), or another negative errno (skipped, counted). */
static int try_pid(struct discover *d, pid_t pid, enum watch_mode mode, uint64_t now_ns, char *why,
		   size_t why_size)
{
	struct target t;
	bool later = false;
	int err;

	d->stats.inspections++;
	err = d->ops.inspect(d->ops.ctx, pid, &t, &later, why, why_size);
	/* its maps list an interpreter whose memory cannot be read: a program caught between
	 * its exec and its last mapping (the exec record is on its way) or unmapping as it
	 * exits. Not an answer about the process, so not a skip: look again soon */
	if (err == -EFAULT && mode != WATCH_NONE) {
		watch(d, pid, mode == WATCH_FAST ? RETRY_EXEC : RETRY_SOON, now_ns);
		return err;
	}
	if (err == -ENOEXEC) {
		if (mode != WATCH_NONE)
			watch(d, pid,
			      mode == WATCH_FAST ? RETRY_EXEC
			      : later		 ? RETRY_SOON
						 : RETRY_KEEP,
			      now_ns);
		return err;
	}
	unwatch(d, pid);
	if (err) {
		if (err != -ESRCH && count_skip(d, pid, t.start_ticks, skip_reason(&t, err)))
			d->ops.note(d->ops.ctx, pid, why);
		return err;
	}
	/* t.seen_ns is the inspection's own stamp, taken before it read anything */
	t.id = d->next_id++;
	if (d->next_id & PW_TARGET_KERNEL_BIT)
		d->next_id = 1; /* 2^31 lifetimes later: the old ones are long gone */
	err = activate(d, &t, true);
	if (err == -E2BIG)
		snprintf(why, why_size, "too many processes to sample PID %d", pid);
	/* the launched command is Python itself: only it is sampled, as with -p, unless
	 * --subprocesses. Decided whenever it becomes a target, not only at its exec: with a
	 * shared libpython that is a retry a few milliseconds later. */
	if (!err && pid == d->launched && !d->opts.subprocesses)
		d->ops.follow(d->ops.ctx, pid, DISCOVER_FOLLOW_EXEC);
	return err;
}

int discover__add_pid(struct discover *d, pid_t pid, char *why, size_t why_size)
{
	int err;

	why[0] = 0;
	d->ops.follow(d->ops.ctx, pid,
		      d->opts.subprocesses ? DISCOVER_FOLLOW_CHILDREN : DISCOVER_FOLLOW_EXEC);
	err = try_pid(d, pid, d->opts.subprocesses ? WATCH_AUTO : WATCH_NONE, 0, why, why_size);
	if (err == -ENOEXEC && d->opts.subprocesses) {
		d->ops.note(d->ops.ctx, pid, "not Python; following its children");
		return 0;
	}
	return err;
}

int discover__add_launched(struct discover *d, pid_t pid)
{
	d->launched = pid;
	/* a shell or make starts the Python: follow descendants until the command turns
	 * out to be Python itself (then only with --subprocesses) */
	d->ops.follow(d->ops.ctx, pid, DISCOVER_FOLLOW_CHILDREN);
	return watch(d, pid, RETRY_EXEC, 0);
}

int discover__scan(struct discover *d, uint64_t now_ns)
{
	char why[512];
	pid_t *pids = NULL;
	int n = d->ops.list_pids(d->ops.ctx, &pids);

	if (n < 0)
		return n;
	for (size_t i = 0; i < d->nskipped; i++)
		d->skipped[i].listed = false;
	for (int i = 0; i < n; i++)
		if (!by_pid(d, pids[i]) && !watched(d, pids[i]))
			try_pid(d, pids[i], WATCH_AUTO, now_ns, why, sizeof(why));
	free(pids);
	/* skipped processes not listed now are gone (their exit records were lost) */
	for (size_t i = d->nskipped; i-- > 0;)
		if (i < d->nskipped && !d->skipped[i].listed)
			unskip(d, d->skipped[i].pid);
	d->next_rescan_ns = now_ns + RESCAN_NS;
	return 0;
}

/* ---- events --------------------------------------------------------------------------- */

static void on_fork(struct discover *d, const struct pw_proc_rec *ev, uint64_t now_ns)
{
	const struct target *parent;
	struct target child;
	char why[512];

	if (!ev->target) {
		if (ev->parent_target)
			d->stats.skipped[DISCOVER_SKIP_MAP_FULL]++;
		if (ev->parent_target || by_pid(d, (pid_t)ev->pid))
			return;
		/* the parent had no config at the fork but is a target now: it was attached
		 * after forking (its records were read late, a loaded machine). The child is
		 * a copy of a Python: look at it now, not on the slow schedule */
		if (by_pid(d, (pid_t)ev->ppid))
			try_pid(d, (pid_t)ev->pid, WATCH_AUTO, now_ns, why, sizeof(why));
		/* a followed non-Python parent: the child tells us what it is when it execs,
		 * or on the slow schedule (it may load an interpreter without exec) */
		else
			watch(d, (pid_t)ev->pid, RETRY_KEEP, now_ns);
		return;
	}
	parent = by_id(d, ev->parent_target);
	if (!parent) {
		/* we never knew the parent (events lost): look at the child afresh, keeping the
		 * id the kernel side gave its config */
		bool later;

		if (d->ops.inspect(d->ops.ctx, (pid_t)ev->pid, &child, &later, why, sizeof(why))) {
			d->ops.detach(d->ops.ctx, (pid_t)ev->pid, ev->target);
			return;
		}
	} else {
		/* the same memory image: the parent's interpreter, version and offsets */
		child = *parent;
		child.pid = (pid_t)ev->pid;
		child.nspid = d->ops.nspid(d->ops.ctx, child.pid);
		if (d->ops.start_time(d->ops.ctx, child.pid, &child.start_ticks)) {
			d->ops.detach(d->ops.ctx, child.pid, ev->target);
			return; /* already gone; its exit record follows */
		}
	}
	child.id = ev->target;
	child.seen_ns = ev->time_ns; /* its config is the kernel's since the fork */
	if (!activate(d, &child, false))
		d->stats.inherited++;
	else
		d->ops.detach(d->ops.ctx, child.pid, ev->target);
}

void discover__on_event(struct discover *d, const struct pw_proc_rec *ev, uint64_t now_ns)
{
	pid_t pid = (pid_t)ev->pid;
	struct target *t = ev->target ? by_id(d, ev->target) : NULL;
	char why[512];

	switch (ev->event) {
	case PW_PROC_FORK:
		on_fork(d, ev, now_ns);
		break;
	case PW_PROC_EXEC:
		unskip(d, pid); /* a new program: a new decision */
		if (t)
			end_target(d, t, DISCOVER_END_EXEC);
		/* A target of this PID that the kernel did not know at the exec was attached
		 * after it: by a retry that ran between the exec and this record (it shows the
		 * new image, keep it), or from an inspection of the old image whose config went
		 * in after the exec hook had run (stale: remove it). Only a target inspected
		 * after the exec is known to be the new image; any other one ends here, or it
		 * would outlive the exec as a second target of the PID, never ended. */
		while ((t = by_pid(d, pid)) && t->seen_ns <= ev->time_ns) {
			d->ops.detach(d->ops.ctx, pid, t->id);
			end_target(d, t, DISCOVER_END_EXEC);
		}
		/* a new program: look at once, then soon again (its libpython is mapped by
		 * the dynamic loader after the exec) */
		if (!t)
			try_pid(d, pid, WATCH_FAST, now_ns, why, sizeof(why));
		break;
	case PW_PROC_EXIT:
		unskip(d, pid);
		if (!t && (t = by_pid(d, pid)))
			/* attached after the kernel's exit hook ran (a zombie still has its
			 * start time): nothing deletes the config written then, and the next
			 * process given this PID would be sampled under it */
			d->ops.detach(d->ops.ctx, pid, t->id);
		if (t)
			end_target(d, t, DISCOVER_END_EXIT);
		if (watched(d, pid)) {
			if (pid == d->launched || d->opts.subprocesses)
				d->stats.not_python++;
			unwatch(d, pid);
		}
		break;
	}
}

uint64_t discover__tick(struct discover *d, uint64_t now_ns)
{
	uint64_t next = UINT64_MAX;
	char why[512];

	if (d->opts.all && now_ns >= d->next_rescan_ns)
		discover__scan(d, now_ns);
	/* try_pid reorders the list (swap-remove): walk it from the end */
	for (size_t i = d->nwatch; i-- > 0;) {
		if (i >= d->nwatch)
			continue;
		if (d->watch[i].next_ns <= now_ns)
			try_pid(d, d->watch[i].pid, WATCH_AUTO, now_ns, why, sizeof(why));
	}
	for (size_t i = 0; i < d->nwatch; i++)
		if (d->watch[i].next_ns < next)
			next = d->watch[i].next_ns;
	if (d->opts.all && d->next_rescan_ns < next)
		next = d->next_rescan_ns;
	return next;
}

const struct target *discover__target(const struct discover *d, uint32_t id)
{
	return by_id(d, id);
}

size_t discover__nactive(const struct discover *d)
{
	return d->ntargets;
}

size_t discover__nwatched(const struct discover *d)
{
	return d->nwatch;
}

const struct target *discover__active(const struct discover *d, size_t i)
{
	return i < d->ntargets ? &d->targets[i] : NULL;
}

const struct discover_stats *discover__stats(const struct discover *d)
{
	return &d->stats;
}
