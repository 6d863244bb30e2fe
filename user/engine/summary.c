// SPDX-License-Identifier: MIT
/* What the engine says at the end: the accounting summary of every perf event and walk
 * (the buckets add up to the total), the off-CPU split, and the details a user needs to
 * trust the counts (drops by reason, names, stack records, processes, lost records). */
#include <stdio.h>
#include <string.h>

#include "engine/async_watch.h"
#include "engine/engine_impl.h"
#include "engine/discover.h"
#include "lib/log.h"
#include "profile/gilstats.h"
#include "profile/offcpu.h"
#include "symbolize/native.h"
#include "symbolize/xstack.h"

static const char *const outcome_labels[] = {
#define PW_X_LABEL(name, label) label,
	PW_OUTCOMES(PW_X_LABEL)
#undef PW_X_LABEL
};

static const char *const counter_labels[] = {
#define PW_X_LABEL(name, label) label,
	PW_COUNTERS(PW_X_LABEL)
#undef PW_X_LABEL
};

/* What a bucket of the summary means, where its name alone does not say (doc/usage.md's words). */
static const char *const outcome_hints[PW_OUT__COUNT] = {
	[PW_OUT_NOT_TARGET] = "other processes and idle CPUs",
	[PW_OUT_NO_TSTATE] = "a thread of the target that runs no Python",
	[PW_OUT_EMPTY] = "a thread state with no frames",
	[PW_OUT_TORN] = "walk did not reach the base/entry frame, or left the data stack",
	[PW_OUT_DEPTH] = "deeper than --max-depth; never truncated",
	[PW_OUT_BAD_FRAME] = "impossible owner, NULL code",
	[PW_OUT_BAD_TLBC] = "free-threaded: instruction pointer in no copy of its code's bytecode",
	[PW_OUT_KSTACK_FAULT] = "--kernel: bpf_get_stack failed; never shipped without it",
	[PW_OUT_ASYNC_FAULT] = "--async: a task, its name or a coroutine could not be read",
	[PW_OUT_ASYNC_LOOP] = "--async: a task awaited by a task of another event loop",
	[PW_OUT_ASYNC_CYCLE] = "--async: tasks that await each other in a ring",
	[PW_OUT_ASYNC_BOUND] = "--async: over 16 tasks, 256 coroutine frames or 1024 awaiters",
	[PW_OUT_ASYNC_CHANGED] = "--async: the running task changed while it was read",
	[PW_OUT_LOST] = "pywalk fell behind; a bigger --ring-size rides out longer stalls",
};

/* Reject reasons are the outcomes labelled so; a new reason added to PW_OUTCOMES is
 * summed without touching this file. */
#define REJECTED_PREFIX "rejected: "

uint64_t engine_rejected(const uint64_t counts[PW_OUT__COUNT], int *worst)
{
	uint64_t sum = 0, max = 0;

	if (worst)
		*worst = PW_OUT_TORN;
	for (int i = 0; i < PW_OUT__COUNT; i++) {
		if (strncmp(outcome_labels[i], REJECTED_PREFIX, strlen(REJECTED_PREFIX)))
			continue;
		sum += counts[i];
		if (counts[i] > max) {
			max = counts[i];
			if (worst)
				*worst = i;
		}
	}
	return sum;
}

const char *engine_outcome_label(int outcome, bool short_label)
{
	const char *label;

	if (outcome < 0 || outcome >= PW_OUT__COUNT)
		return "?";
	label = outcome_labels[outcome];
	if (short_label && !strncmp(label, REJECTED_PREFIX, strlen(REJECTED_PREFIX)))
		label += strlen(REJECTED_PREFIX);
	return label;
}

static double secs(uint64_t ns)
{
	return (double)ns / 1e9;
}

/* Every switch-out of a target thread in one bucket, and what became of the stacks. */
static void print_offcpu_summary(struct engine *e, const struct engine_counts *c)
{
	const struct offcpu_stats *st = offcpu__stats(e->off);
	uint64_t total = st->open_ns, ns[PW_BLOCK__COUNT];

	/* held stacks' time is counted here, that of stacks walked at a syscall exit in BPF */
	for (int i = 0; i < PW_BLOCK__COUNT; i++) {
		ns[i] = st->ns[i] + c->counters[PW_CNT_OFFCPU_NS_PREEMPTED + i];
		total += ns[i];
	}
	log_printf(LOG_INFO, "pywalk: %llu walks of waiting threads, accounted as:\n",
		   (unsigned long long)c->offcpu_runs);
	for (int i = 0; i < PW_OUT__COUNT; i++)
		if (c->offcpu_outcomes[i] || i == PW_OUT_SHIPPED || log_level >= LOG_DEBUG)
			log_printf(LOG_INFO, "  %-26s %10llu\n", engine_outcome_label(i, false),
				   (unsigned long long)c->offcpu_outcomes[i]);
	log_printf(
		LOG_INFO,
		"pywalk: off-CPU: %llu stacks, %.3f s counted: %llu waits ended (%.3f s sleeping, %.3f s "
		"uninterruptible/I/O, %.3f s preempted, %.3f s other), %llu still waiting at the "
		"end (%.3f s); not counted: %llu shorter than --min-block, %llu left again "
		"before their return was seen, %llu over the memory budget, %llu of an ended "
		"lifetime\n",
		(unsigned long long)st->held, secs(total), (unsigned long long)st->counted,
		secs(ns[PW_BLOCK_SLEEP]), secs(ns[PW_BLOCK_IO]), secs(ns[PW_BLOCK_PREEMPTED]),
		secs(ns[PW_BLOCK_OTHER]), (unsigned long long)st->open_at_end, secs(st->open_ns),
		(unsigned long long)st->short_blocks, (unsigned long long)st->replaced,
		(unsigned long long)st->over_budget, (unsigned long long)st->ended);
	if (c->counters[PW_CNT_OFFCPU_UNSEEN])
		log_printf(LOG_INFO,
			   "pywalk: off-CPU: %llu return%s the kernel did not show, timed from the "
			   "thread's run time when it left again\n",
			   (unsigned long long)c->counters[PW_CNT_OFFCPU_UNSEEN],
			   c->counters[PW_CNT_OFFCPU_UNSEEN] == 1 ? "" : "s");
	if (e->s.min_block_ns)
		log_printf(
			LOG_INFO,
			"pywalk: off-CPU: %llu waits in system calls deferred to their exit: %llu "
			"walked there (%.3f s), %llu shorter than --min-block (not walked), %llu "
			"still waiting at the end (read from memory), %llu not attributed (their "
			"exit was not seen); %llu preemptions not walked\n",
			(unsigned long long)c->counters[PW_CNT_OFFCPU_DEFERRED],
			(unsigned long long)st->at_exit, secs(st->at_exit_ns),
			(unsigned long long)c->counters[PW_CNT_OFFCPU_SHORT],
			(unsigned long long)e->deferred_at_end,
			(unsigned long long)c->counters[PW_CNT_OFFCPU_UNATTRIBUTED],
			(unsigned long long)c->counters[PW_CNT_OFFCPU_PREEMPTIONS]);
	if (e->seeded)
		log_printf(LOG_INFO,
			   "pywalk: off-CPU: %llu thread%s already waiting when sampling "
			   "began, %s read from memory\n",
			   (unsigned long long)e->seeded, e->seeded == 1 ? " was" : "s were",
			   e->seeded == 1 ? "its stack" : "their stacks");
}

static const char *gil_thread_name(void *ctx, uint32_t target, uint32_t tid)
{
	return profile__thread_name(ctx, target, tid);
}

void engine__print_gil_stats(struct engine *e)
{
	if (e->gil)
		gilstats__print(e->gil, stderr, profile__period_ns(e->prof),
				e->s.mode == CLI_MODE_WALL, gil_thread_name, e->prof);
}

void engine__print_summary(struct engine *e, const struct engine_counts *c)
{
	if (log_level < LOG_INFO)
		return;
	if (e->off)
		print_offcpu_summary(e, c);
	if (e->s.mode != CLI_MODE_OFFCPU) {
		log_printf(LOG_INFO, "pywalk: %llu perf event%s, accounted as:\n",
			   (unsigned long long)c->runs, c->runs == 1 ? "" : "s");
		/* the buckets that counted something (all of them with -v): they add up to the
		 * total; the sampler has no --filter and no --aggregate */
		for (int i = 0; i < PW_OUT__COUNT; i++) {
			if (i == PW_OUT_FILTERED || i == PW_OUT_AGG_FULL ||
			    (!c->outcomes[i] && log_level < LOG_DEBUG))
				continue;
			log_printf(LOG_INFO, "  %-26s %10llu", engine_outcome_label(i, false),
				   (unsigned long long)c->outcomes[i]);
			if (outcome_hints[i])
				fprintf(stderr, "   (%s)", outcome_hints[i]);
			fprintf(stderr, "\n");
		}
	}
	if (e->s.mode == CLI_MODE_GIL)
		fprintf(stderr,
			"pywalk: --mode gil: of the stacks shipped, %llu not counted: %llu "
			"of threads not holding the GIL, %llu of threads whose Python "
			"does not tell\n",
			(unsigned long long)(e->gil_not_held + e->gil_unknown),
			(unsigned long long)e->gil_not_held, (unsigned long long)e->gil_unknown);
	if (e->s.mode == CLI_MODE_GIL && e->gil_free_threaded)
		fprintf(stderr,
			"pywalk: --mode gil: %llu free-threaded process%s sampled in cpu "
			"mode: no GIL to attribute\n",
			(unsigned long long)e->gil_free_threaded,
			e->gil_free_threaded == 1 ? "" : "es");
	engine__print_details(e, c);
}

/* How the Python thread names went: said when a read failed (the outputs then show those
 * threads by their OS names), and with -v always. */
static void print_names(const struct profile_names *n)
{
	bool missed = n->failed || n->unreadable || n->over_budget;

	if (!missed && log_level < LOG_DEBUG)
		return;
	log_printf(missed ? LOG_INFO : LOG_DEBUG,
		   "pywalk: Python thread names: %llu of %llu sampled thread%s named; %llu "
		   "read%s of threading's threads (%llu memory reads), %llu failed, %llu found "
		   "no threading module, %llu held back by the process's read budget, %llu "
		   "name%s unreadable\n",
		   (unsigned long long)n->named, (unsigned long long)n->threads,
		   n->threads == 1 ? "" : "s", (unsigned long long)n->reads,
		   n->reads == 1 ? "" : "s", (unsigned long long)n->mem_reads,
		   (unsigned long long)n->failed, (unsigned long long)n->no_threading,
		   (unsigned long long)n->over_budget, (unsigned long long)n->unreadable,
		   n->unreadable == 1 ? "" : "s");
}

void engine__print_details(struct engine *e, const struct engine_counts *c)
{
	const struct discover_stats *ds = e->disc ? discover__stats(e->disc) : NULL;
	/* the agent's windows took theirs with them: the run's, all windows together */
	struct profile_drops run;
	const struct profile_drops *d = &run;
	uint64_t dropped = 0, skipped = 0;

	if (log_level < LOG_INFO)
		return;
	profile__run_drops(e->prof, &run);
	for (int i = 0; i < PROFILE_DROP__COUNT; i++)
		dropped += run.n[i];
	if (dropped) {
		const char *sep = ": ";

		log_printf(LOG_INFO, "pywalk: of the shipped stacks, %llu %s not counted",
			   (unsigned long long)dropped, dropped == 1 ? "was" : "were");
		for (int i = 0; i < PROFILE_DROP__COUNT; i++) {
			if (!d->n[i])
				continue;
			fprintf(stderr, "%s%llu %s", sep, (unsigned long long)d->n[i],
				profile_drop_text(i));
			sep = ", ";
		}
		fprintf(stderr, "\n");
	}
	print_names(profile__names(e->prof));
	if (e->xs) {
		const struct xstack_stats *xs = xstack__stats(e->xs);
		bool both = e->s.kernel && e->s.native_stack;

		/* (samples without theirs are in the drops above, under their own reason) */
		log_printf(LOG_INFO,
			   "pywalk: %s: %llu stacks shipped with their %s; %llu %s "
			   "records without their sample (not counted)\n",
			   both		 ? "--kernel --native"
			   : e->s.kernel ? "--kernel"
					 : "--native",
			   (unsigned long long)xs->paired,
			   both		 ? "kernel and native stacks"
			   : e->s.kernel ? "kernel stack"
					 : "native stack",
			   (unsigned long long)(xs->unpaired + xs->malformed),
			   both		 ? "stack"
			   : e->s.kernel ? "kernel stack"
					 : "native stack");
	}
	if (e->native) {
		const struct native_stats *ns = native__stats(e->native);
		uint64_t tried = ns->unwound + ns->incomplete;

		log_printf(LOG_INFO,
			   "pywalk: --native: %llu stacks unwound to their first frame, "
			   "%llu stopped short, %.1f us each; maps re-read %llu times; "
			   "deepest stack read %llu bytes; binaries held %.1f MiB at "
			   "most (budget %llu MiB), %llu processes closed to stay in it\n",
			   (unsigned long long)ns->unwound, (unsigned long long)ns->incomplete,
			   tried ? (double)ns->unwind_ns / 1e3 / (double)tried : 0.0,
			   (unsigned long long)ns->map_reloads, (unsigned long long)ns->stack_used,
			   (double)ns->peak_bytes / (1 << 20),
			   (unsigned long long)(ns->budget >> 20), (unsigned long long)ns->evicted);
	}
	if (e->aw) {
		const struct async_watch_stats *as = async_watch__stats(e->aw);

		log_printf(LOG_INFO,
			   "pywalk: --async: %llu samples of a thread running a task, %llu in a "
			   "task's step outside its coroutine (no chain), %llu of processes whose "
			   "task table was not known (yet); task tables of %llu process%s found, "
			   "%llu rejected; %llu process%s before 3.14 (no task table)\n",
			   (unsigned long long)c->counters[PW_CNT_ASYNC_RUNNING],
			   (unsigned long long)c->counters[PW_CNT_ASYNC_OUTSIDE],
			   (unsigned long long)c->counters[PW_CNT_ASYNC_UNKNOWN],
			   (unsigned long long)as->found, as->found == 1 ? "" : "es",
			   (unsigned long long)as->rejected, (unsigned long long)as->too_old,
			   as->too_old == 1 ? "" : "es");
	}
	if (profile__timeline_dropped(e->prof))
		pw_warn("%llu samples are counted but not in the timeline: it keeps %zu MiB of "
			"samples at most\n",
			(unsigned long long)profile__timeline_dropped(e->prof),
			PROFILE_TIMELINE_BUDGET >> 20);
	if (!ds)
		return;
	for (int i = 0; i < DISCOVER_SKIP__COUNT; i++)
		skipped += ds->skipped[i];
	if (ds->targets > 1 || skipped || e->s.all || e->s.subprocesses) {
		log_printf(LOG_INFO,
			   "pywalk: %llu process%s sampled (%llu fork %s inherited %s parent's "
			   "interpreter)",
			   (unsigned long long)ds->targets, ds->targets == 1 ? "" : "es",
			   (unsigned long long)ds->inherited,
			   ds->inherited == 1 ? "child" : "children",
			   ds->inherited == 1 ? "its" : "their");
		if (skipped) {
			const char *sep = "; skipped: ";

			for (int i = 0; i < DISCOVER_SKIP__COUNT; i++) {
				if (!ds->skipped[i])
					continue;
				fprintf(stderr, "%s%llu %s", sep,
					(unsigned long long)ds->skipped[i], discover_skip_label(i));
				sep = ", ";
			}
		}
		fprintf(stderr, "\n");
	}
	if (c->counters[PW_CNT_PROC_LOST] || c->counters[PW_CNT_CODE_LOST])
		pw_warn("%llu process event%s and %llu code record%s lost (ring buffer full)\n",
			(unsigned long long)c->counters[PW_CNT_PROC_LOST],
			c->counters[PW_CNT_PROC_LOST] == 1 ? "" : "s",
			(unsigned long long)c->counters[PW_CNT_CODE_LOST],
			c->counters[PW_CNT_CODE_LOST] == 1 ? " was" : "s were");
	if (log_level >= LOG_DEBUG) {
		const struct symtab_stats *ss = profile__symtab_stats(e->prof);

		for (int i = 1; i < PW_CNT__COUNT; i++)
			pw_debug("%s: %llu\n", counter_labels[i],
				 (unsigned long long)c->counters[i]);
		pw_debug("code objects: %llu from code records, %llu read from targets, %llu "
			 "records rejected, %llu evicted; cache %zu of %zu bytes, names %zu bytes; "
			 "%llu inspections\n",
			 (unsigned long long)ss->from_records, (unsigned long long)ss->from_memory,
			 (unsigned long long)ss->bad_records, (unsigned long long)ss->evictions,
			 ss->bytes, ss->budget, ss->func_bytes,
			 (unsigned long long)ds->inspections);
	}
}
