// SPDX-License-Identifier: MIT
/* The agent's work on the engine's thread. A window closes by rotating the engine's
 * profile (each sample is in exactly one window: the rotation happens between records),
 * then each process with samples becomes one gzipped pprof, queued to every sink. A pull
 * is a tap: a profile counting alongside for N seconds. The metrics text is rebuilt here
 * once a second, so the listener's thread never touches sampling state. */
#define _GNU_SOURCE
#include <errno.h>
#include <fnmatch.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "profile/agg.h"
#include "lib/escape.h"
#include "lib/log.h"
#include "agent/metrics.h"
#include "output/out.h"
#include "agent/serve.h"
#include "agent/sinks.h"
#include "lib/util.h"

#define MAX_SINKS AGENT_MAX_SINKS
/* The metrics page is rendered this often, on a fixed grid: a page rendered "a second after
 * the last one" drifts later by each loop's lateness, and two scrapes a second apart then
 * read the same page (the consumer is woken only every 100 ms). */
#define METRICS_EVERY_NS 250000000ull
/* How often a pull's listener thread looks whether its client is still there. */
#define PULL_CHECK_NS 200000000l

struct pull {
	unsigned int seconds;
	int64_t pid;
	struct profile *tap; /* the engine's thread's, while started and not done */
	uint64_t until_ns;
	bool started, done;
	bool abandoned; /* its requester gave up waiting: the engine's thread frees it */
	int err;
	void *buf;
	size_t len;
	struct pull *next;
};

struct agent {
	struct agent_config c;
	struct engine *e;
	struct sink *sinks[MAX_SINKS];
	size_t nsinks;
	bool need_otlp;
	struct serve *srv;
	uint64_t pull_bytes;
	char host[129];
	uint64_t next_window_ns, next_metrics_ns, start_wall_s;
	/* how far behind the windows' time line the wall clock was last said to be (0: not) */
	int64_t clock_behind_said_ns;
	/* counted across windows (a window takes its profile's drops with it) */
	uint64_t windows, profiles, profile_bytes, encode_failures;
	struct profile_drops drops;
	uint64_t listener_refused[SERVE_REFUSAL__COUNT]; /* by listeners before a reload */
	/* shared with the listener's threads */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct pull *pulls;
	size_t npulls;
	bool stopping;
	char *metrics_text;
};

/* ---- windows ------------------------------------------------------------------------- */

static void add_drops(struct profile_drops *to, const struct profile_drops *d)
{
	for (int i = 0; i < PROFILE_DROP__COUNT; i++)
		to->n[i] += d->n[i];
}

/* A gzipped pprof of `p` per `o`, into *buf (malloc'ed). 0 or a negative errno. */
static int encode_pprof(const struct profile *p, const struct out_pprof_opts *o, void **buf,
			size_t *len)
{
	char *mem = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&mem, &size);
	int err;

	if (!f)
		return -ENOMEM;
	err = out_pprof_write_opts(f, p, o);
	if (fclose(f) && !err)
		err = -ENOMEM;
	if (err) {
		free(mem);
		return err;
	}
	*buf = mem;
	*len = size;
	return 0;
}

/* The service a process is filed under: what its environment asks for, else the first
 * --service rule that matches its script/module or its comm, else the script/module. */
static const char *service_of(const struct agent_config *c, const struct profile_process *pr)
{
	const char *guess = pr->service[0] ? pr->service : pr->comm;

	if (pr->service_asked)
		return guess;
	for (size_t i = 0; i < c->nservice_rules; i++) {
		const char *rule = c->service_rules[i], *eq = strrchr(rule, '=');
		char glob[256];

		if (!eq || (size_t)(eq - rule) >= sizeof(glob))
			continue;
		memcpy(glob, rule, (size_t)(eq - rule));
		glob[eq - rule] = 0;
		if (!fnmatch(glob, guess, 0) || !fnmatch(glob, pr->comm, 0))
			return eq + 1;
	}
	return guess;
}

/* One export item: process `proc` of window `w`, with `samples` samples in the `nstacks`
 * agg stacks `stacks` (its own). */
static int export_process(struct agent *a, const struct profile *w, uint32_t proc, uint64_t samples,
			  const uint32_t *stacks, size_t nstacks)
{
	const struct profile_process *pr = profile__process(w, proc);
	const struct profile_sampling *smp = profile__sampling(w);
	const char *labels[5][2];
	struct out_pprof_opts o = {
		.proc = proc, .fleet = true, .labels = labels, .stacks = stacks, .nstacks = nstacks
	};
	struct export_item *it;
	char pid[16];
	int err;

	if (!pr)
		return 0;
	it = export_item__new();
	if (!it)
		return -ENOMEM;
	snprintf(pid, sizeof(pid), "%d", pr->pid);
	it->from_ns = smp->start_ns;
	it->until_ns = smp->end_ns;
	it->rate_hz = smp->frequency_hz;
	it->samples = samples;
	escape_label(service_of(&a->c, pr), it->service, sizeof(it->service));
	export_item__label(it, "service_name", it->service);
	export_item__label(it, "pid", pid);
	export_item__label(it, "host", a->host);
	export_item__label(it, "container_id", pr->container);
	export_item__label(it, "python_version", pr->python);
	if (pr->free_threaded)
		export_item__label(it, "free_threaded", "true");
	/* the same as sample labels, so a file from the export dir says what it is */
	labels[0][0] = "service_name";
	labels[0][1] = it->service;
	labels[1][0] = "host";
	labels[1][1] = a->host;
	labels[2][0] = "python_version";
	labels[2][1] = pr->python;
	o.nlabels = 3;
	if (pr->container[0]) {
		labels[o.nlabels][0] = "container_id";
		labels[o.nlabels++][1] = pr->container;
	}
	if (pr->free_threaded) {
		labels[o.nlabels][0] = "free_threaded";
		labels[o.nlabels++][1] = "true";
	}
	err = encode_pprof(w, &o, &it->pprof, &it->pprof_len);
	if (!err && a->need_otlp) {
		struct out_otlp_opts oo = { .proc = proc,
					    .service = it->service,
					    .host = a->host,
					    .stacks = stacks,
					    .nstacks = nstacks };

		err = out_otlp_encode(w, &oo, &it->otlp, &it->otlp_len);
	}
	if (err) {
		export_item__put(it);
		return err;
	}
	a->profiles++;
	a->profile_bytes += it->pprof_len;
	for (size_t i = 0; i < a->nsinks; i++)
		sink__push(a->sinks[i], it);
	export_item__put(it);
	return 0;
}

/* The wall clock against the windows' time line (profile.c), said when it moves by more than
 * a second: stepped back, the windows go on along the line, ahead of the clock; stepped
 * forward, the next window starts at the clock, after a gap. */
#define CLOCK_SAY_NS 1000000000ll

static void note_clock(struct agent *a, const struct profile *w)
{
	uint64_t end = profile__sampling(w)->end_ns;
	uint64_t next = profile__sampling(engine__profile(a->e))->start_ns;
	struct timespec ts;
	int64_t behind;

	clock_gettime(CLOCK_REALTIME, &ts);
	behind = (int64_t)(end - ((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec));
	if (next > end)
		pw_warn("the clock is %.3f s ahead of the windows' time line (stepped forward?): "
			"the next window starts at the clock, after a gap\n",
			(double)(next - end) / 1e9);
	if (behind >= CLOCK_SAY_NS && llabs(behind - a->clock_behind_said_ns) >= CLOCK_SAY_NS) {
		pw_warn("the clock is %.3f s behind the windows' time line (stepped back?): windows "
			"go on along the line, ahead of the clock, so that none starts before one "
			"already closed\n",
			(double)behind / 1e9);
		a->clock_behind_said_ns = behind;
	} else if (behind < CLOCK_SAY_NS && a->clock_behind_said_ns) {
		pw_info("the clock is back on the windows' time line\n");
		a->clock_behind_said_ns = 0;
	}
}

int agent__close_window(struct agent *a)
{
	struct profile *w = profile__rotate(engine__profile(a->e));
	const struct agg *agg;
	uint64_t *counts;
	/* process p's stacks are stacks[first[p] .. first[p + 1]), listed in one pass: each
	 * process's profile is then written from its own stacks, so a window of N processes
	 * costs its stacks, not N times them (4,096 processes took seconds a window, and the
	 * ring buffer overflowed meanwhile) */
	uint32_t *stacks;
	size_t nprocs, nstacks, *first;
	int err = 0;

	if (!w)
		return -ENOMEM;
	a->windows++;
	note_clock(a, w);
	add_drops(&a->drops, profile__drops(w));
	agg = profile__agg(w);
	nprocs = profile__nprocesses(w);
	nstacks = agg__nstacks(agg);
	counts = calloc(nprocs ? nprocs : 1, sizeof(*counts));
	first = calloc(nprocs + 1, sizeof(*first));
	stacks = malloc((nstacks ? nstacks : 1) * sizeof(*stacks));
	if (!counts || !first || !stacks) {
		free(counts);
		free(first);
		free(stacks);
		profile__free(w);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nstacks; i++) {
		const struct agg_stack *s = agg__stack(agg, i);

		if (s->proc < nprocs) {
			counts[s->proc] += s->count;
			first[s->proc + 1]++;
		}
	}
	for (size_t p = 0; p < nprocs; p++)
		first[p + 1] += first[p];
	/* first[p] moves to p's end as p's stacks go in, then each takes its predecessor's */
	for (size_t i = 0; i < nstacks; i++) {
		uint32_t proc = agg__stack(agg, i)->proc;

		if (proc < nprocs)
			stacks[first[proc]++] = (uint32_t)i;
	}
	for (size_t p = nprocs; p > 0; p--)
		first[p] = first[p - 1];
	first[0] = 0;
	for (size_t i = 0; i < nprocs && !err; i++) {
		if (!counts[i])
			continue;
		err = export_process(a, w, (uint32_t)i, counts[i], stacks + first[i],
				     first[i + 1] - first[i]);
		if (err && err != -ENOMEM) {
			/* one process's profile that cannot be encoded costs only itself */
			a->encode_failures++;
			err = 0;
		}
	}
	free(counts);
	free(first);
	free(stacks);
	profile__free(w);
	/* what only that window named is freed now: a long life must not keep every name */
	engine__collect_names(a->e);
	return err;
}

/* ---- pulls ---------------------------------------------------------------------------- */

static int on_pull(void *ctx, unsigned int seconds, int64_t pid, bool (*gone)(void *),
		   void *gone_arg, void **buf, size_t *len)
{
	struct agent *a = ctx;
	struct pull *p;
	struct timespec limit;
	int err, gone_err = -ETIMEDOUT;

	pthread_mutex_lock(&a->lock);
	if (a->stopping) {
		pthread_mutex_unlock(&a->lock);
		return -ESHUTDOWN;
	}
	if (a->npulls >= ENGINE_MAX_TAPS) {
		pthread_mutex_unlock(&a->lock);
		return -EBUSY;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		pthread_mutex_unlock(&a->lock);
		return -ENOMEM;
	}
	p->seconds = seconds;
	p->pid = pid;
	p->next = a->pulls;
	a->pulls = p;
	a->npulls++;
	clock_gettime(CLOCK_MONOTONIC, &limit);
	limit.tv_sec += seconds + 60;
	/* in short waits: a client that went away must not hold a tap for minutes */
	while (!p->done) {
		struct timespec slice;

		clock_gettime(CLOCK_MONOTONIC, &slice);
		if (slice.tv_sec > limit.tv_sec)
			break;
		slice.tv_nsec += PULL_CHECK_NS;
		if (slice.tv_nsec >= 1000000000) {
			slice.tv_sec++;
			slice.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&a->cond, &a->lock, &slice);
		if (!p->done && gone(gone_arg)) {
			gone_err = -ECONNRESET;
			break;
		}
	}
	if (!p->done) {
		/* the engine's thread owns its tap: it ends the pull on its next tick */
		p->abandoned = true;
		pthread_mutex_unlock(&a->lock);
		return gone_err;
	}
	for (struct pull **pp = &a->pulls; *pp; pp = &(*pp)->next) {
		if (*pp == p) {
			*pp = p->next;
			a->npulls--;
			break;
		}
	}
	pthread_mutex_unlock(&a->lock);
	err = p->err;
	if (!err) {
		*buf = p->buf;
		*len = p->len;
	} else {
		free(p->buf);
	}
	free(p);
	return err;
}

/* Start new pulls, finish those whose time is up. Caller holds the lock. */
static void run_pulls(struct agent *a, uint64_t now)
{
	bool woke = false;

	for (struct pull **pp = &a->pulls; *pp;) {
		struct pull *p = *pp;

		if (p->abandoned) {
			*pp = p->next;
			a->npulls--;
			if (p->tap) {
				engine__remove_tap(a->e, p->tap);
				profile__free(p->tap);
			}
			free(p->buf);
			free(p);
			continue;
		}
		pp = &p->next;
		if (p->done)
			continue;
		if (!p->started) {
			p->tap = profile__new_tap(engine__profile(a->e));
			if (!p->tap || engine__add_tap(a->e, p->tap)) {
				profile__free(p->tap);
				p->tap = NULL;
				p->err = -EBUSY;
				p->done = woke = true;
				continue;
			}
			p->started = true;
			p->until_ns = now + p->seconds * 1000000000ull;
			continue;
		}
		if (agg__bytes(profile__agg(p->tap)) > a->pull_bytes) {
			engine__remove_tap(a->e, p->tap);
			profile__free(p->tap);
			p->tap = NULL;
			p->err = -E2BIG;
			p->done = woke = true;
			continue;
		}
		if (now < p->until_ns)
			continue;
		engine__remove_tap(a->e, p->tap);
		profile__stop_sampling(p->tap);
		{
			struct out_pprof_opts o = { .proc = -1, .pid = p->pid, .fleet = true };

			p->err = encode_pprof(p->tap, &o, &p->buf, &p->len);
		}
		profile__free(p->tap);
		p->tap = NULL;
		p->done = woke = true;
	}
	if (woke)
		pthread_cond_broadcast(&a->cond);
}

/* ---- metrics -------------------------------------------------------------------------- */

static char *on_metrics(void *ctx)
{
	struct agent *a = ctx;
	char *text;

	pthread_mutex_lock(&a->lock);
	text = strdup(a->metrics_text ? a->metrics_text : "");
	pthread_mutex_unlock(&a->lock);
	return text;
}

/* "rejected: torn chain" -> "torn_chain": a label value that reads like the summary's */
/* The outcome as a metric label value: a snake_case id a query can name, stable when the
 * printed words change. */
static void outcome_value(int outcome, char *buf, size_t size)
{
	static const char *const ids[PW_OUT__COUNT] = {
		[PW_OUT_SHIPPED] = "shipped",
		[PW_OUT_NOT_TARGET] = "not_target",
		[PW_OUT_FILTERED] = "filtered",
		[PW_OUT_NOT_PYTHON] = "not_python",
		[PW_OUT_NO_TSTATE] = "no_thread_state",
		[PW_OUT_EMPTY] = "empty_stack",
		[PW_OUT_TORN] = "torn_chain",
		[PW_OUT_CYCLE] = "cycle",
		[PW_OUT_DEPTH] = "depth_bound",
		[PW_OUT_READ_FAULT] = "read_fault",
		[PW_OUT_BAD_FRAME] = "bad_frame",
		[PW_OUT_LOST] = "lost",
		[PW_OUT_AGG_FULL] = "aggregation_full",
		[PW_OUT_NESTED] = "nested",
		[PW_OUT_KSTACK_FAULT] = "kernel_stack_unreadable",
		[PW_OUT_BAD_TLBC] = "bad_tlbc",
	};

	if (outcome >= 0 && outcome < PW_OUT__COUNT && ids[outcome]) {
		snprintf(buf, size, "%s", ids[outcome]);
		return;
	}
	/* an outcome added without an id here: its words, made a label */
	escape_label(engine_outcome_label(outcome, true), buf, size);
	for (char *c = buf; *c; c++)
		*c = *c == '-' ? '_' : *c;
}

static uint64_t rss_bytes(void)
{
	long pages = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "re");

	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
			resident = 0;
		fclose(f);
	}
	return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* Every sink's name and counts, each read once: the families written from them agree with
 * each other (a latency sum and its count from the same instant). */
static void snapshot_sinks(struct agent *a, struct agent_totals *t)
{
	t->nsinks = a->nsinks;
	for (size_t i = 0; i < a->nsinks; i++) {
		snprintf(t->sink_names[i], sizeof(t->sink_names[i]), "%s", sink__name(a->sinks[i]));
		sink__stats(a->sinks[i], &t->sinks[i]);
	}
}

/* The counts of a sink's that the export families show. */
enum export_count { EXPORTED, REJECTED, DROPPED, FAILED_ATTEMPTS, QUEUED_BYTES, LATENCY_SUM };

/* The export families: each writes, sink after sink, its samples in the order given. */
static const struct export_family {
	const char *name, *type, *help;
	struct export_sample {
		const char *name;   /* the family's, or a summary's _sum and _count */
		const char *result; /* the value of a "result" label, NULL: no such label */
		enum export_count count;
	} samples[3]; /* up to the first without a name */
} export_families[] = {
	{ "pywalk_export_profiles_total",
	  "counter",
	  "Profiles per sink, by result.",
	  { { "pywalk_export_profiles_total", "exported", EXPORTED },
	    { "pywalk_export_profiles_total", "rejected", REJECTED },
	    { "pywalk_export_profiles_total", "dropped", DROPPED } } },
	{ "pywalk_export_failed_attempts_total",
	  "counter",
	  "Delivery attempts that failed and were retried.",
	  { { "pywalk_export_failed_attempts_total", NULL, FAILED_ATTEMPTS } } },
	{ "pywalk_export_queue_bytes",
	  "gauge",
	  "Bytes waiting in a sink's queue.",
	  { { "pywalk_export_queue_bytes", NULL, QUEUED_BYTES } } },
	{ "pywalk_export_latency_seconds",
	  "summary",
	  "Time to deliver a profile, by sink.",
	  { { "pywalk_export_latency_seconds_sum", NULL, LATENCY_SUM },
	    { "pywalk_export_latency_seconds_count", NULL, EXPORTED } } },
};

static void render_export_metrics(struct strbuf *sb, const struct agent_totals *t)
{
	for (size_t f = 0; f < ARRAY_SIZE(export_families); f++) {
		const struct export_family *fam = &export_families[f];

		metrics_family(sb, fam->name, fam->type, fam->help);
		for (size_t i = 0; i < t->nsinks; i++) {
			const struct sink_stats *st = &t->sinks[i];
			const double counts[] = { [EXPORTED] = (double)st->exported,
						  [REJECTED] = (double)st->rejected,
						  [DROPPED] = (double)st->dropped,
						  [FAILED_ATTEMPTS] = (double)st->failed_attempts,
						  [QUEUED_BYTES] = (double)st->queued_bytes,
						  [LATENCY_SUM] = st->latency_sum_s };
			const struct export_sample *smp = fam->samples;

			for (; smp < fam->samples + ARRAY_SIZE(fam->samples) && smp->name; smp++) {
				const char *result_key = smp->result ? "result" : NULL;
				const char *l[] = { "sink", t->sink_names[i], result_key,
						    smp->result, NULL };

				metrics_sample(sb, smp->name, l, counts[smp->count]);
			}
		}
	}
}

static int render_metrics(struct agent *a, struct strbuf *sb)
{
	const struct discover_stats *ds = discover__stats(engine__discover(a->e));
	const struct symtab_stats *ss = profile__symtab_stats(engine__profile(a->e));
	struct profile_drops drops = a->drops;
	struct agent_totals sinks;
	struct engine_counts c;
	struct rusage ru;
	char v[64];
	int err;

	add_drops(&drops, profile__drops(engine__profile(a->e)));
	err = engine__read_counts(a->e, &c);
	if (err)
		return err;
	metrics_family(sb, "pywalk_samples_total", "counter",
		       "Sampler runs by outcome (they add up to pywalk_sampler_runs_total).");
	for (int i = 0; i < PW_OUT__COUNT; i++) {
		const char *l[] = { "outcome", v, NULL };

		outcome_value(i, v, sizeof(v));
		metrics_sample(sb, "pywalk_samples_total", l, (double)c.outcomes[i]);
	}
	metrics_one(sb, "pywalk_sampler_runs_total", "counter",
		    "Times the sampler ran (perf events).", (double)c.runs);
	metrics_family(sb, "pywalk_stacks_not_counted_total", "counter",
		       "Shipped stacks userspace could not count, by reason.");
	for (int i = 0; i < PROFILE_DROP__COUNT; i++) {
		const char *l[] = { "reason", profile_drop_name(i), NULL };

		metrics_sample(sb, "pywalk_stacks_not_counted_total", l, (double)drops.n[i]);
	}
	metrics_family(sb, "pywalk_records_total", "counter",
		       "Code records and process events from the kernel side, by result.");
	{
		const struct {
			const char *kind, *result;
			int cnt;
		} r[] = { { "code", "shipped", PW_CNT_CODE_SENT },
			  { "code", "lost", PW_CNT_CODE_LOST },
			  { "code", "unreadable", PW_CNT_CODE_UNREADABLE },
			  { "process", "shipped", PW_CNT_PROC_SENT },
			  { "process", "lost", PW_CNT_PROC_LOST },
			  { "process", "map_full", PW_CNT_PROC_FULL } };

		for (size_t i = 0; i < ARRAY_SIZE(r); i++) {
			const char *l[] = { "kind", r[i].kind, "result", r[i].result, NULL };

			metrics_sample(sb, "pywalk_records_total", l, (double)c.counters[r[i].cnt]);
		}
	}
	metrics_one(sb, "pywalk_processes_tracked", "gauge", "Processes being sampled now.",
		    (double)discover__nactive(engine__discover(a->e)));
	metrics_one(sb, "pywalk_processes_watched", "gauge",
		    "Followed processes that may become Python.",
		    (double)discover__nwatched(engine__discover(a->e)));
	metrics_one(sb, "pywalk_processes_sampled_total", "counter",
		    "Process lifetimes sampled (an exec is a new one).", (double)ds->targets);
	metrics_family(sb, "pywalk_processes_skipped_total", "counter",
		       "Processes not sampled, by reason.");
	for (int i = 0; i < DISCOVER_SKIP__COUNT; i++) {
		const char *l[] = { "reason", discover_skip_id(i), NULL };

		metrics_sample(sb, "pywalk_processes_skipped_total", l, (double)ds->skipped[i]);
	}
	metrics_family(sb, "pywalk_listener_refused_total", "counter",
		       "Listener requests refused or pulls cut short, by reason.");
	for (int i = 0; i < SERVE_REFUSAL__COUNT; i++) {
		const char *l[] = { "reason", serve_refusal_name(i), NULL };

		metrics_sample(sb, "pywalk_listener_refused_total", l,
			       (double)(a->listener_refused[i] + serve__refused(a->srv, i)));
	}
	metrics_one(sb, "pywalk_symbol_cache_bytes", "gauge",
		    "Bytes held by the code-object cache.", (double)ss->bytes);
	metrics_one(sb, "pywalk_symbol_cache_budget_bytes", "gauge",
		    "The code-object cache's byte budget.", (double)ss->budget);
	metrics_one(sb, "pywalk_symbol_cache_evictions_total", "counter",
		    "Code objects evicted from the cache.", (double)ss->evictions);
	metrics_one(sb, "pywalk_names_bytes", "gauge",
		    "Bytes held by function names, files and mappings.", (double)ss->func_bytes);
	metrics_one(sb, "pywalk_names_collected_total", "counter",
		    "Names freed at window end: no cached code object or live "
		    "profile held them.",
		    (double)ss->names_collected);
	metrics_one(sb, "pywalk_windows_total", "counter", "Windows closed.", (double)a->windows);
	metrics_one(sb, "pywalk_pulls_in_progress", "gauge",
		    "Pulls holding or waiting for one of the engine's taps.", (double)a->npulls);
	metrics_one(sb, "pywalk_window_profiles_total", "counter",
		    "Profiles made from closed windows (one per process).", (double)a->profiles);
	metrics_one(sb, "pywalk_window_profile_bytes_total", "counter",
		    "Bytes of those profiles (gzipped pprof).", (double)a->profile_bytes);
	snapshot_sinks(a, &sinks);
	render_export_metrics(sb, &sinks);
	getrusage(RUSAGE_SELF, &ru);
	metrics_one(sb, "process_cpu_seconds_total", "counter",
		    "User and system CPU time of the agent.",
		    (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
			    (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6);
	metrics_one(sb, "process_resident_memory_bytes", "gauge", "Resident memory of the agent.",
		    (double)rss_bytes());
	metrics_one(sb, "process_start_time_seconds", "gauge",
		    "When the agent started (Unix time).", (double)a->start_wall_s);
	return sb->err;
}

static void refresh_metrics(struct agent *a)
{
	struct strbuf sb = { 0 };

	if (!a->srv || render_metrics(a, &sb)) {
		strbuf_free(&sb);
		return;
	}
	pthread_mutex_lock(&a->lock);
	free(a->metrics_text);
	a->metrics_text = sb.buf; /* ownership moves */
	pthread_mutex_unlock(&a->lock);
}

/* ---- lifetime ------------------------------------------------------------------------- */

int agent__tick(struct agent *a, uint64_t now)
{
	int err = 0;

	if (now >= a->next_window_ns) {
		err = agent__close_window(a);
		a->next_window_ns += a->c.interval_ms * 1000000ull;
		if (a->next_window_ns <= now)
			a->next_window_ns = now + a->c.interval_ms * 1000000ull;
	}
	pthread_mutex_lock(&a->lock);
	run_pulls(a, now);
	pthread_mutex_unlock(&a->lock);
	if (now >= a->next_metrics_ns) {
		refresh_metrics(a);
		a->next_metrics_ns += METRICS_EVERY_NS;
		if (a->next_metrics_ns <= now)
			a->next_metrics_ns = now + METRICS_EVERY_NS;
	}
	return err;
}

static int add_sink(struct agent *a, struct sink *s, const char *what, const char *why)
{
	if (!s) {
		pw_err("%s: %s\n", what, why);
		return -EINVAL;
	}
	a->sinks[a->nsinks++] = s;
	a->need_otlp |= sink__ops(s)->needs_otlp;
	return 0;
}

void agent__totals(struct agent *a, struct agent_totals *t)
{
	memset(t, 0, sizeof(*t));
	t->windows = a->windows;
	t->profiles = a->profiles;
	t->profile_bytes = a->profile_bytes;
	t->encode_failures = a->encode_failures;
	t->drops = a->drops;
	for (int i = 0; i < SERVE_REFUSAL__COUNT; i++)
		t->listener_refused[i] = a->listener_refused[i] + serve__refused(a->srv, i);
	snapshot_sinks(a, t);
}

void agent__carry(struct agent *a, const struct agent_totals *t)
{
	a->windows += t->windows;
	a->profiles += t->profiles;
	a->profile_bytes += t->profile_bytes;
	a->encode_failures += t->encode_failures;
	add_drops(&a->drops, &t->drops);
	for (int i = 0; i < SERVE_REFUSAL__COUNT; i++)
		a->listener_refused[i] += t->listener_refused[i];
	for (size_t i = 0; i < t->nsinks; i++)
		for (size_t j = 0; j < a->nsinks; j++)
			if (!strcmp(t->sink_names[i], sink__name(a->sinks[j])))
				sink__carry(a->sinks[j], &t->sinks[i]);
}

struct agent *agent__new(const struct agent_config *c, struct engine *e)
{
	struct sink_opts so = { .queue_bytes = c->queue_bytes ? c->queue_bytes : 64 << 20,
				.backoff_min_s = 1,
				.backoff_max_s = 60,
				.flush_timeout_s =
					c->flush_timeout_s > 0 ? c->flush_timeout_s : 10 };
	/* in the order their metrics are listed, after the export directory's */
	const struct {
		const char *url, *tenant; /* --tenant is Pyroscope's */
		struct sink *(*start)(const struct http_sink_opts *o, const struct sink_opts *opts,
				      char *why, size_t why_size);
		const char *what; /* the error's start when it cannot */
	} http_sinks[] = {
		{ c->pyroscope, c->pyroscope_tenant, sink_pyroscope_new,
		  "cannot send to Pyroscope" },
		{ c->parca, NULL, sink_parca_new, "cannot send to Parca" },
		{ c->otlp, NULL, sink_otlp_new, "cannot send OTLP profiles" },
	};
	struct serve_ops sops = { .metrics = on_metrics, .pull = on_pull };
	struct agent *a = calloc(1, sizeof(*a));
	char why[512] = "";

	if (!a) {
		pw_err("out of memory\n");
		return NULL;
	}
	a->c = *c;
	a->e = e;
	a->pull_bytes = c->pull_bytes ? c->pull_bytes : AGENT_PULL_BYTES_DEFAULT;
	pthread_mutex_init(&a->lock, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&a->cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	if (c->host && c->host[0])
		escape_label(c->host, a->host, sizeof(a->host));
	else if (!gethostname(a->host, sizeof(a->host) - 1))
		escape_label(a->host, a->host, sizeof(a->host));
	a->start_wall_s = (uint64_t)time(NULL);
	a->next_window_ns = now_ns() + c->interval_ms * 1000000ull;
	if (c->export_dir && add_sink(a,
				      sink_dir_new(c->export_dir, c->keep_ms * 1000000ull,
						   c->keep_bytes, &so, why, sizeof(why)),
				      "cannot export to a directory", why))
		goto fail;
	for (size_t i = 0; i < ARRAY_SIZE(http_sinks); i++) {
		struct http_sink_opts ho = { .url = http_sinks[i].url,
					     .tenant = http_sinks[i].tenant,
					     .basic_auth_file = c->basic_auth_file,
					     .token_file = c->token_file };

		if (ho.url && add_sink(a, http_sinks[i].start(&ho, &so, why, sizeof(why)),
				       http_sinks[i].what, why))
			goto fail;
	}
	if (c->metrics) {
		struct serve_opts listener = { .addr = c->metrics,
					       .public = c->metrics_public,
					       .group = c->metrics_group,
					       .token_file = c->metrics_token_file,
					       .tls_cert = c->metrics_tls_cert,
					       .tls_key = c->metrics_tls_key };

		sops.ctx = a;
		a->srv = serve__new(&listener, &sops, why, sizeof(why));
		if (!a->srv) {
			pw_err("%s\n", why);
			goto fail;
		}
		refresh_metrics(a);
	}
	return a;
fail:
	agent__free(a, NULL);
	return NULL;
}

void agent__free(struct agent *a, struct agent_totals *totals)
{
	if (!a)
		return;
	/* pulls first: their listener threads wake and go */
	pthread_mutex_lock(&a->lock);
	a->stopping = true;
	for (struct pull *p = a->pulls; p; p = p->next) {
		if (p->done)
			continue;
		if (p->tap) {
			engine__remove_tap(a->e, p->tap);
			profile__free(p->tap);
			p->tap = NULL;
		}
		p->err = -ESHUTDOWN;
		p->done = true;
	}
	pthread_cond_broadcast(&a->cond);
	pthread_mutex_unlock(&a->lock);
	/* its counts, final once it is stopped, outlive it: the totals are taken below */
	serve__stop(a->srv);
	for (int i = 0; i < SERVE_REFUSAL__COUNT; i++)
		a->listener_refused[i] += serve__refused(a->srv, i);
	serve__free(a->srv);
	a->srv = NULL;
	while (a->pulls) { /* only abandoned ones are left once the listener is gone */
		struct pull *p = a->pulls;

		a->pulls = p->next;
		free(p->buf);
		free(p);
	}
	/* every sink's flush timeout runs from now, together, not one after the other */
	for (size_t i = 0; i < a->nsinks; i++)
		sink__stop(a->sinks[i]);
	for (size_t i = 0; i < a->nsinks; i++)
		sink__join(a->sinks[i]);
	if (totals)
		agent__totals(a, totals);
	for (size_t i = 0; i < a->nsinks; i++)
		sink__free(a->sinks[i]);
	pthread_cond_destroy(&a->cond);
	pthread_mutex_destroy(&a->lock);
	free(a->metrics_text);
	free(a);
}
