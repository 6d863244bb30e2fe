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
#include "lib/json.h"
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

/* "comm (PID[, ns N, container ID])" as part of a string */
static void add_process_name(struct json *w, const struct profile *p, uint32_t proc)
{
	const struct profile_process *pr = profile__process(p, proc);
	char tag[PROFILE_TAG_SIZE];

	profile__process_tag(p, proc, tag, sizeof(tag));
	json_string_part(w, pr ? pr->comm : "?");
	json_string_part(w, tag);
}

/* `"name":"[PROBE / ][PROCESS / ]THREAD (TID)"` (probe 0: none) */
static void add_profile_name(struct json *w, const struct profile *p, uint32_t probe, uint32_t proc,
			     uint32_t tid)
{
	const struct profile_opts *o = profile__opts(p);

	json_key(w, "name");
	json_string_begin(w);
	if (probe && probe < PW_MAX_PROBES && o->probe_names[probe]) {
		json_string_part(w, o->probe_names[probe]);
		json_string_part(w, " / ");
	}
	if (o->by_process) {
		add_process_name(w, p, proc);
		json_string_part(w, " / ");
	}
	json_string_part(w, profile__proc_thread_name(p, proc, tid));
	json_string_partf(w, " (%u)", tid);
	json_string_end(w);
}

/* The document's "name": the process, or a plain title when there are several */
static void add_doc_name(struct json *w, const struct profile *p, const struct stack_ref *refs,
			 size_t n)
{
	json_key(w, "name");
	if (!n || profile__opts(p)->by_process) {
		json_string(w, n ? "pywalk: several processes" : "pywalk: no samples");
		return;
	}
	json_string_begin(w);
	add_process_name(w, p, refs[0].proc);
	json_string_end(w);
}

/* "shared":{"frames":[...]}: the frames in order of first use; fills map (agg frame id ->
 * index). */
static void add_frames(struct json *w, const struct profile *p, const struct stack_ref *refs,
		       size_t n, uint32_t *map)
{
	const struct agg *agg = profile__agg(p);
	const struct symtab *st = profile__symtab(p);
	size_t nfuncs = symtab__nfuncs(st);
	/* machine code frames are one frame per function, whatever address in it ran */
	uint32_t next = 0, *by_func = malloc((nfuncs ? nfuncs : 1) * sizeof(*by_func));

	json_key(w, "shared");
	json_begin_object(w);
	json_key(w, "frames");
	json_begin_array(w);
	if (!by_func) {
		json_fail(w, -ENOMEM);
		return;
	}
	memset(by_func, 0xff, (nfuncs ? nfuncs : 1) * sizeof(*by_func));
	for (size_t i = 0; i < n && !json_error(w); i++) {
		const struct agg_stack *s = agg__stack(agg, refs[i].index);
		const uint32_t *ids = agg__stack_frames(agg, s);

		for (uint32_t j = 0; j < s->nframes; j++) {
			const struct agg_frame *fr = agg__frame(agg, ids[j]);
			enum frame_kind kind = symtab__func_kind(st, fr->func);
			bool machine = frame_kind_is_machine(kind) && fr->func < nfuncs;

			if (map[ids[j]] != NO_INDEX)
				continue;
			if (machine && by_func[fr->func] != NO_INDEX) {
				map[ids[j]] = by_func[fr->func];
				continue;
			}
			if (machine)
				by_func[fr->func] = next;
			map[ids[j]] = next++;
			json_break(w);
			json_begin_object(w);
			/* "do_syscall_64 [kernel]": speedscope shows names only */
			json_key(w, "name");
			json_string_begin(w);
			json_string_part(w, symtab__func_name(st, fr->func));
			json_string_part(w, frame_kind_suffix(kind));
			json_string_end(w);
			json_key_string(w, "file", symtab__func_file(st, fr->func));
			/* line 0: the line table had no line for the instruction */
			if (fr->line > 0) {
				json_key_int(w, "line", fr->line);
			}
			json_end_object(w);
		}
	}
	json_end_array(w);
	json_end_object(w);
	free(by_func);
}

/* `"type":"sampled","name":..,"unit":..,"startValue":0,"endValue":END,` and the "samples" key:
 * the part a sampled profile opens with */
static void add_profile_head(struct json *w, const struct profile *p, uint32_t probe, uint32_t proc,
			     uint32_t tid, bool ns, uint64_t end)
{
	json_begin_object(w);
	json_key_string(w, "type", "sampled");
	add_profile_name(w, p, probe, proc, tid);
	json_key_string(w, "unit", ns ? "nanoseconds" : "none");
	json_key_uint(w, "startValue", 0);
	json_key_uint(w, "endValue", end);
	json_break(w);
	json_key(w, "samples");
}

/* One sample: its frame indexes, root first */
static void add_sample(struct json *w, const struct agg *agg, size_t stack, const uint32_t *map)
{
	const struct agg_stack *s = agg__stack(agg, stack);
	const uint32_t *ids = agg__stack_frames(agg, s);

	json_break(w);
	json_begin_array(w);
	for (uint32_t j = 0; j < s->nframes; j++)
		json_uint(w, map[ids[j]]);
	json_end_array(w);
}

/* One "sampled" profile for the stacks refs[0..n) of one thread. */
static void add_profile(struct json *w, const struct profile *p, const struct stack_ref *refs,
			size_t n, const uint32_t *map)
{
	const struct agg *agg = profile__agg(p);
	const struct profile_opts *o = profile__opts(p);
	uint64_t period_ns = profile__period_ns(p), weight = period_ns ? period_ns : 1, end = 0;
	bool ns = period_ns != 0;
	size_t i;

	if (o->nprobes) {
		/* a probe's hits have no period: they count once, or weigh nanoseconds */
		weight = 1;
		ns = refs[0].probe < PW_MAX_PROBES && o->probe_ns[refs[0].probe];
	}
	for (i = 0; i < n; i++)
		end += agg__stack(agg, refs[i].index)->count * weight;
	add_profile_head(w, p, refs[0].probe, refs[0].proc, refs[0].tid, ns, end);
	json_begin_array(w);
	for (i = 0; i < n && !json_error(w); i++)
		add_sample(w, agg, refs[i].index, map);
	json_end_array(w);
	json_break(w);
	json_key(w, "weights");
	json_begin_array(w);
	for (i = 0; i < n && !json_error(w); i++)
		json_uint(w, agg__stack(agg, refs[i].index)->count * weight);
	json_end_array(w);
	json_end_object(w);
}

/* `{"$schema":..,"exporter":..,"name":..,"shared":{"frames":[..]},"profiles":[`, the frames
 * those of the stacks refs[0..n) (map: agg frame id -> index, NO_INDEX filled) */
static void add_head(struct json *w, const struct profile *p, const struct stack_ref *refs,
		     size_t n, uint32_t *map)
{
	json_begin_object(w);
	json_key_string(w, "$schema", SCHEMA_URL);
	json_key_string(w, "exporter", "pywalk " PYWALK_VERSION);
	add_doc_name(w, p, refs, n);
	json_break(w);
	add_frames(w, p, refs, n, map);
	json_break(w);
	json_key(w, "profiles");
	json_begin_array(w);
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

/* `],"activeProfileIndex":N}` and the document out to f */
static int finish(FILE *f, struct json *w, size_t active, int err)
{
	json_end_array(w);
	json_break(w);
	json_key_uint(w, "activeProfileIndex", active);
	json_end_object(w);
	json_break(w);
	if (!err)
		err = json_finish(w);
	if (!err && fwrite(w->sb->buf, 1, w->sb->len, f) != w->sb->len)
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
	struct json w;
	int err = all_stacks(p, &refs, &map);

	json_init(&w, &sb, false);
	/* group by probe and thread; within one, the agg's order (first seen) */
	if (!err) {
		qsort(refs, n, sizeof(*refs), cmp_stack_ref);
		add_head(&w, p, refs, n, map);
	}
	for (start = 0; start < n && !err && !json_error(&w); start = i) {
		weight = 0;
		for (i = start; i < n && same_profile(&refs[i], &refs[start]); i++)
			weight += agg__stack(agg, refs[i].index)->count;
		/* open on the busiest thread */
		if (weight > best) {
			best = weight;
			active = nprofiles;
		}
		if (nprofiles++)
			json_break(&w); /* the first right after the '[' */
		add_profile(&w, p, refs + start, i - start, map);
	}
	err = finish(f, &w, active, err);
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

/* A timeline sample: a stack, or an empty one (a gap), and the time it stands for */
struct slot {
	size_t stack; /* GAP: none */
	uint64_t ns;
};
#define GAP SIZE_MAX

/* One thread's samples ev[0..n), in the order taken, on a time axis starting at t0, as slots
 * (at most 2n): a gap between two samples is an empty sample (speedscope shows nothing
 * there), and a sample that begins before the previous one ended (a sampling period that
 * overlaps a wait, timer jitter) starts at its end, so that every sample keeps its full
 * weight and the totals are the flame graph's. *end: where the last one ends. */
static size_t timed_slots(const struct timed *ev, size_t n, uint64_t t0, struct slot *slots,
			  uint64_t *end)
{
	uint64_t cursor = 0;
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t s = ev[i].start - t0, dur = ev[i].end - ev[i].start;

		if (s < cursor)
			s = cursor;
		if (s > cursor)
			slots[k++] = (struct slot){ .stack = GAP, .ns = s - cursor };
		slots[k++] = (struct slot){ .stack = ev[i].stack, .ns = dur };
		cursor = s + dur;
	}
	*end = cursor;
	return k;
}

static void add_timed_profile(struct json *w, const struct profile *p, const struct timed *ev,
			      size_t n, uint64_t t0, const uint32_t *map)
{
	const struct agg *agg = profile__agg(p);
	struct slot *slots = malloc(2 * n * sizeof(*slots));
	uint64_t end;
	size_t k, i;

	if (!slots) {
		json_fail(w, -ENOMEM);
		return;
	}
	k = timed_slots(ev, n, t0, slots, &end);
	add_profile_head(w, p, 0, ev[0].proc, ev[0].tid, true, end);
	json_begin_array(w);
	for (i = 0; i < k && !json_error(w); i++) {
		if (slots[i].stack != GAP) {
			add_sample(w, agg, slots[i].stack, map);
			continue;
		}
		json_break(w);
		json_begin_array(w);
		json_end_array(w);
	}
	json_end_array(w);
	json_break(w);
	json_key(w, "weights");
	json_begin_array(w);
	for (i = 0; i < k && !json_error(w); i++)
		json_uint(w, slots[i].ns);
	json_end_array(w);
	json_end_object(w);
	free(slots);
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
	struct json w;
	int err = ev ? all_stacks(p, &refs, &map) : -ENOMEM;

	json_init(&w, &sb, false);

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
		add_head(&w, p, refs, agg__nstacks(agg), map);
	}
	for (start = 0; start < n && !err && !json_error(&w); start = i) {
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
			json_break(&w); /* the first right after the '[' */
		add_timed_profile(&w, p, ev + start, i - start, t0, map);
	}
	err = finish(f, &w, active, err);
	strbuf_free(&sb);
	free(map);
	free(refs);
	free(ev);
	return err;
}
