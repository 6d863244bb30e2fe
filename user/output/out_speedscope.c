// SPDX-License-Identifier: MIT
/* speedscope's JSON file format (https://www.speedscope.app/file-format-schema.json): shared
 * frames {name, file, line}, one "sampled" profile per thread (speedscope's thread selector
 * replaces --threads root frames), samples as frame-index arrays root first, and weights in
 * CPU nanoseconds (count x sampling period), or in samples when the period is unknown.
 * The timeline is the same document with each thread's samples in the order they happened
 * and weighing the time they stand for, so that speedscope's time-order view is true.
 * trace's probes each get their own profiles (a file holds any number), named after the
 * probe, weighing hits (unit none) or nanoseconds (--latency). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/pywalk.h"
#include "lib/escape.h"
#include "output/out.h"

#define SCHEMA_URL "https://www.speedscope.app/file-format-schema.json"
#define NO_INDEX UINT32_MAX

struct stack_ref {
	uint32_t probe;	    /* trace's probe (0: the sampler) */
	uint32_t proc, tid; /* process lifetime (agg stack proc) and thread */
	size_t index;	    /* into the agg's stacks */
};

static bool same_profile(const struct stack_ref *a, const struct stack_ref *b)
{
	return a->probe == b->probe && a->proc == b->proc && a->tid == b->tid;
}

static int cmp_stack_ref(const void *a, const void *b)
{
	const struct stack_ref *x = a, *y = b;

	if (x->probe != y->probe)
		return x->probe < y->probe ? -1 : 1;
	if (x->proc != y->proc)
		return x->proc < y->proc ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

/* `"key":"escaped value"` */
static int add_str_member(struct strbuf *sb, const char *key, const char *value)
{
	int err = strbuf_addf(sb, "\"%s\":\"", key);

	if (!err)
		err = escape_json(sb, value);
	if (!err)
		err = strbuf_add(sb, "\"", 1);
	return err;
}

/* "name":"NAME SUFFIX", the name escaped (the suffix is pywalk's own text) */
static int add_name_member(struct strbuf *sb, const char *name, const char *suffix)
{
	int err = strbuf_add(sb, "\"name\":\"", 8);

	if (!err)
		err = escape_json(sb, name);
	if (!err)
		err = strbuf_addf(sb, "%s\"", suffix);
	return err;
}

/* "comm (PID[, ns N, container ID])": the tag is digits and hex, it needs no escaping */
static int add_process_name(struct strbuf *sb, const struct profile *p, uint32_t proc)
{
	const struct profile_process *pr = profile__process(p, proc);
	char tag[PROFILE_TAG_SIZE];
	int err = escape_json(sb, pr ? pr->comm : "?");

	profile__process_tag(p, proc, tag, sizeof(tag));
	return err ? err : strbuf_add(sb, tag, strlen(tag));
}

/* `"name":"[PROBE / ][PROCESS / ]THREAD (TID)"` (probe 0: none) */
static int add_profile_name(struct strbuf *sb, const struct profile *p, uint32_t probe,
			    uint32_t proc, uint32_t tid)
{
	const struct profile_opts *o = profile__opts(p);
	int err = strbuf_add(sb, "\"name\":\"", 8);

	if (!err && probe && probe < PW_MAX_PROBES && o->probe_names[probe]) {
		err = escape_json(sb, o->probe_names[probe]);
		if (!err)
			err = strbuf_add(sb, " / ", 3);
	}
	if (!err && o->by_process) {
		err = add_process_name(sb, p, proc);
		if (!err)
			err = strbuf_add(sb, " / ", 3);
	}
	if (!err)
		err = escape_json(sb, profile__proc_thread_name(p, proc, tid));
	if (!err)
		err = strbuf_addf(sb, " (%u)\"", tid);
	return err;
}

/* `,"name":...,` of the document: the process, or a plain title when there are several */
static int add_doc_name(struct strbuf *sb, const struct profile *p, const struct stack_ref *refs,
			size_t n)
{
	int err;

	if (!n || profile__opts(p)->by_process)
		return strbuf_addf(sb, ",\"name\":\"pywalk: %s\",\n",
				   n ? "several processes" : "no samples");
	err = strbuf_add(sb, ",\"name\":\"", 9);
	if (!err)
		err = add_process_name(sb, p, refs[0].proc);
	if (!err)
		err = strbuf_add(sb, "\",\n", 3);
	return err;
}

/* The frames in order of first use, as JSON objects; fills map (agg frame id -> index). */
static int add_frames(struct strbuf *sb, const struct profile *p, const struct stack_ref *refs,
		      size_t n, uint32_t *map)
{
	const struct agg *agg = profile__agg(p);
	const struct symtab *st = profile__symtab(p);
	size_t nfuncs = symtab__nfuncs(st);
	/* machine code frames are one frame per function, whatever address in it ran */
	uint32_t next = 0, *by_func = malloc((nfuncs ? nfuncs : 1) * sizeof(*by_func));
	int err = by_func ? strbuf_add(sb, "\"shared\":{\"frames\":[", 20) : -ENOMEM;

	if (by_func)
		memset(by_func, 0xff, (nfuncs ? nfuncs : 1) * sizeof(*by_func));
	for (size_t i = 0; i < n && !err; i++) {
		const struct agg_stack *s = agg__stack(agg, refs[i].index);
		const uint32_t *ids = agg__stack_frames(agg, s);

		for (uint32_t j = 0; j < s->nframes && !err; j++) {
			const struct agg_frame *fr = agg__frame(agg, ids[j]);
			enum frame_kind kind = symtab__func_kind(st, fr->func);
			bool machine = frame_kind_is_machine(kind) && fr->func < nfuncs;

			if (map[ids[j]] != NO_INDEX)
				continue;
			if (machine && by_func[fr->func] != NO_INDEX) {
				map[ids[j]] = by_func[fr->func];
				continue;
			}
			err = next ? strbuf_add(sb, ",\n{", 3) : strbuf_add(sb, "\n{", 2);
			if (machine)
				by_func[fr->func] = next;
			map[ids[j]] = next++;
			/* "do_syscall_64 [kernel]": speedscope shows names only */
			if (!err)
				err = add_name_member(sb, symtab__func_name(st, fr->func),
						      frame_kind_suffix(kind));
			if (!err)
				err = strbuf_add(sb, ",", 1);
			if (!err)
				err = add_str_member(sb, "file", symtab__func_file(st, fr->func));
			/* line 0: the line table had no line for the instruction */
			if (!err && fr->line > 0)
				err = strbuf_addf(sb, ",\"line\":%d", fr->line);
			if (!err)
				err = strbuf_add(sb, "}", 1);
		}
	}
	if (!err)
		err = strbuf_add(sb, "]},\n", 4);
	free(by_func);
	return err;
}

/* One "sampled" profile for the stacks refs[0..n) of one thread. */
static int add_profile(struct strbuf *sb, const struct profile *p, const struct stack_ref *refs,
		       size_t n, const uint32_t *map)
{
	const struct agg *agg = profile__agg(p);
	const struct profile_opts *o = profile__opts(p);
	uint64_t period_ns = profile__period_ns(p), weight = period_ns ? period_ns : 1, end = 0;
	bool ns = period_ns != 0;
	size_t i;
	int err;

	if (o->nprobes) {
		/* a probe's hits have no period: they count once, or weigh nanoseconds */
		weight = 1;
		ns = refs[0].probe < PW_MAX_PROBES && o->probe_ns[refs[0].probe];
	}
	for (i = 0; i < n; i++)
		end += agg__stack(agg, refs[i].index)->count * weight;
	err = strbuf_add(sb, "{\"type\":\"sampled\",", 18);
	if (!err)
		err = add_profile_name(sb, p, refs[0].probe, refs[0].proc, refs[0].tid);
	if (!err)
		err = strbuf_addf(sb,
				  ",\"unit\":\"%s\",\"startValue\":0,\"endValue\":%llu,\n"
				  "\"samples\":[",
				  ns ? "nanoseconds" : "none", (unsigned long long)end);
	for (i = 0; i < n && !err; i++) {
		const struct agg_stack *s = agg__stack(agg, refs[i].index);
		const uint32_t *ids = agg__stack_frames(agg, s);

		err = strbuf_add(sb, i ? ",\n[" : "\n[", i ? 3 : 2);
		for (uint32_t j = 0; j < s->nframes && !err; j++)
			err = strbuf_addf(sb, j ? ",%u" : "%u", map[ids[j]]);
		if (!err)
			err = strbuf_add(sb, "]", 1);
	}
	if (!err)
		err = strbuf_add(sb, "],\n\"weights\":[", 14);
	for (i = 0; i < n && !err; i++) {
		uint64_t w = agg__stack(agg, refs[i].index)->count * weight;

		err = strbuf_addf(sb, i ? ",%llu" : "%llu", (unsigned long long)w);
	}
	if (!err)
		err = strbuf_add(sb, "]}", 2);
	return err;
}

/* `{"$schema":..,"exporter":..,"name":..,"shared":{"frames":[..]},"profiles":[`, the frames
 * those of the stacks refs[0..n) (map: agg frame id -> index, NO_INDEX filled) */
static int add_head(struct strbuf *sb, const struct profile *p, const struct stack_ref *refs,
		    size_t n, uint32_t *map)
{
	int err = strbuf_add(sb, "{", 1);

	if (!err)
		err = add_str_member(sb, "$schema", SCHEMA_URL);
	if (!err)
		err = strbuf_add(sb, ",", 1);
	if (!err)
		err = add_str_member(sb, "exporter", "pywalk " PYWALK_VERSION);
	if (!err)
		err = add_doc_name(sb, p, refs, n);
	if (!err)
		err = add_frames(sb, p, refs, n, map);
	if (!err)
		err = strbuf_add(sb, "\"profiles\":[", 12);
	return err;
}

/* Every agg stack as a ref, and the frame map, allocated; NULL refs on ENOMEM. */
static int all_stacks(const struct profile *p, struct stack_ref **refs, uint32_t **map)
{
	const struct agg *agg = profile__agg(p);
	size_t n = agg__nstacks(agg), nframes = agg__nframes(agg);

	*refs = calloc(n ? n : 1, sizeof(**refs));
	*map = malloc((nframes ? nframes : 1) * sizeof(**map));
	if (!*refs || !*map)
		return -ENOMEM;
	memset(*map, 0xff, (nframes ? nframes : 1) * sizeof(**map));
	for (size_t i = 0; i < n; i++) {
		const struct agg_stack *s = agg__stack(agg, i);

		(*refs)[i] = (struct stack_ref){
			.probe = s->probe, .proc = s->proc, .tid = s->tid, .index = i
		};
	}
	return 0;
}

static int finish(FILE *f, struct strbuf *sb, size_t active, int err)
{
	if (!err)
		err = strbuf_addf(sb, "],\n\"activeProfileIndex\":%zu}\n", active);
	if (!err && fwrite(sb->buf, 1, sb->len, f) != sb->len)
		err = -EIO;
	if (!err && ferror(f))
		err = -EIO;
	return err;
}

int out_speedscope_write(FILE *f, const struct profile *p)
{
	const struct agg *agg = profile__agg(p);
	size_t n = agg__nstacks(agg), i, start, nprofiles = 0;
	struct stack_ref *refs = NULL;
	uint32_t *map = NULL;
	uint64_t best = 0, weight;
	size_t active = 0;
	struct strbuf sb = { 0 };
	int err = all_stacks(p, &refs, &map);

	/* group by probe and thread; within one, the agg's order (first seen) */
	if (!err) {
		qsort(refs, n, sizeof(*refs), cmp_stack_ref);
		err = add_head(&sb, p, refs, n, map);
	}
	for (start = 0; start < n && !err; start = i) {
		weight = 0;
		for (i = start; i < n && same_profile(&refs[i], &refs[start]); i++)
			weight += agg__stack(agg, refs[i].index)->count;
		/* open on the busiest thread */
		if (weight > best) {
			best = weight;
			active = nprofiles;
		}
		if (nprofiles++)
			err = strbuf_add(&sb, ",\n", 2);
		if (!err)
			err = add_profile(&sb, p, refs + start, i - start, map);
	}
	err = finish(f, &sb, active, err);
	strbuf_free(&sb);
	free(map);
	free(refs);
	return err;
}

/* ---- timeline: the same document, each thread's samples in the order they happened ---- */

struct timed {
	uint64_t start, end; /* kernel monotonic ns */
	uint32_t proc, tid;
	size_t stack;
};

static int cmp_timed(const void *a, const void *b)
{
	const struct timed *x = a, *y = b;

	if (x->proc != y->proc)
		return x->proc < y->proc ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	/* by when the sample was taken: an on-CPU sample's interval is its period before
	 * that, which may overlap a wait that ended just before it */
	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	return (x->start > y->start) - (x->start < y->start);
}

/* One thread's samples ev[0..n), in the order taken, on a time axis starting at t0, into
 * `samples` and `weights`: a gap between two samples is an empty sample (speedscope shows
 * nothing there), and a sample that begins before the previous one ended (a sampling period
 * that overlaps a wait, timer jitter) starts at its end, so that every sample keeps its full
 * weight and the totals are the flame graph's. *end: where the last one ends. */
static int add_timed_samples(struct strbuf *samples, struct strbuf *weights,
			     const struct profile *p, const struct timed *ev, size_t n, uint64_t t0,
			     const uint32_t *map, uint64_t *end)
{
	const struct agg *agg = profile__agg(p);
	uint64_t cursor = 0;
	int err = 0;

	for (size_t i = 0; i < n && !err; i++) {
		uint64_t s = ev[i].start - t0, dur = ev[i].end - ev[i].start;
		const struct agg_stack *st = agg__stack(agg, ev[i].stack);
		const uint32_t *ids = agg__stack_frames(agg, st);
		const char *sep = samples->len ? ",\n" : "\n";

		if (s < cursor)
			s = cursor;
		if (s > cursor) {
			err = strbuf_addf(samples, "%s[]", sep);
			if (!err)
				err = strbuf_addf(weights, weights->len ? ",%llu" : "%llu",
						  (unsigned long long)(s - cursor));
			sep = ",\n";
		}
		if (!err)
			err = strbuf_addf(samples, "%s[", sep);
		for (uint32_t j = 0; j < st->nframes && !err; j++)
			err = strbuf_addf(samples, j ? ",%u" : "%u", map[ids[j]]);
		if (!err)
			err = strbuf_add(samples, "]", 1);
		if (!err)
			err = strbuf_addf(weights, weights->len ? ",%llu" : "%llu",
					  (unsigned long long)dur);
		cursor = s + dur;
	}
	*end = cursor;
	return err;
}

static int add_timed_profile(struct strbuf *sb, const struct profile *p, const struct timed *ev,
			     size_t n, uint64_t t0, const uint32_t *map)
{
	struct strbuf samples = { 0 }, weights = { 0 };
	uint64_t end;
	int err = add_timed_samples(&samples, &weights, p, ev, n, t0, map, &end);

	if (!err)
		err = strbuf_add(sb, "{\"type\":\"sampled\",", 18);
	if (!err)
		err = add_profile_name(sb, p, 0, ev[0].proc, ev[0].tid);
	if (!err)
		err = strbuf_addf(sb,
				  ",\"unit\":\"nanoseconds\",\"startValue\":0,\"endValue\":%llu,\n"
				  "\"samples\":[",
				  (unsigned long long)end);
	if (!err)
		err = strbuf_add(sb, samples.buf, samples.len);
	if (!err)
		err = strbuf_add(sb, "],\n\"weights\":[", 14);
	if (!err)
		err = strbuf_add(sb, weights.buf, weights.len);
	if (!err)
		err = strbuf_add(sb, "]}", 2);
	strbuf_free(&samples);
	strbuf_free(&weights);
	return err;
}

int out_timeline_write(FILE *f, const struct profile *p)
{
	const struct agg *agg = profile__agg(p);
	size_t nev = 0, n = 0, i, start, nprofiles = 0, active = 0, best = 0;
	const struct profile_process *pr;
	bool main_found = false;
	const struct profile_event *events = profile__timeline(p, &nev);
	struct timed *ev = calloc(nev ? nev : 1, sizeof(*ev));
	struct stack_ref *refs = NULL;
	uint32_t *map = NULL;
	uint64_t t0 = UINT64_MAX;
	struct strbuf sb = { 0 };
	int err = ev ? all_stacks(p, &refs, &map) : -ENOMEM;

	for (i = 0; i < nev && !err; i++) {
		const struct agg_stack *s = agg__stack(agg, events[i].stack);

		if (!s || !events[i].dur_ns || events[i].dur_ns > events[i].end_ns)
			continue; /* a hit counted, not timed (trace without --latency) */
		ev[n] = (struct timed){ .start = events[i].end_ns - events[i].dur_ns,
					.end = events[i].end_ns,
					.proc = s->proc,
					.tid = s->tid,
					.stack = events[i].stack };
		if (ev[n].start < t0)
			t0 = ev[n].start;
		n++;
	}
	if (!err) {
		qsort(ev, n, sizeof(*ev), cmp_timed);
		err = add_head(&sb, p, refs, agg__nstacks(agg), map);
	}
	for (start = 0; start < n && !err; start = i) {
		for (i = start; i < n && ev[i].proc == ev[start].proc && ev[i].tid == ev[start].tid;
		     i++)
			;
		/* open on the first process's main thread (where a program's story is told),
		 * else on the thread with the most samples */
		pr = profile__process(p, ev[start].proc);
		if (!main_found && pr && (uint32_t)pr->pid == ev[start].tid) {
			main_found = true;
			active = nprofiles;
		} else if (!main_found && i - start > best) {
			best = i - start;
			active = nprofiles;
		}
		if (nprofiles++)
			err = strbuf_add(&sb, ",\n", 2);
		if (!err)
			err = add_timed_profile(&sb, p, ev + start, i - start, t0, map);
	}
	err = finish(f, &sb, active, err);
	strbuf_free(&sb);
	free(map);
	free(refs);
	free(ev);
	return err;
}
