// SPDX-License-Identifier: MIT
/* speedscope's JSON file format (https://www.speedscope.app/file-format-schema.json): shared
 * frames {name, file, line}, one "sampled" profile per thread (speedscope's thread selector
 * replaces --threads root frames), samples as frame-index arrays root first, and weights in
 * CPU nanoseconds (count x sampling period), or in samples when the period is unknown. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "escape.h"
#include "out.h"

#define SCHEMA_URL "https://www.speedscope.app/file-format-schema.json"
#define NO_INDEX UINT32_MAX

/* A profile is one thread of one process lifetime (proc): a PID reused or exec'd during the
 * recording is another process, with its own names, in profiles of its own. */
struct stack_ref {
	uint32_t pid, proc, tid;
	size_t index; /* into the agg's stacks */
};

static int cmp_stack_ref(const void *a, const void *b)
{
	const struct stack_ref *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
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

static int add_profile_name(struct strbuf *sb, const struct profile *p,
			    const struct stack_ref *ref)
{
	int err = strbuf_add(sb, "\"name\":\"", 8);

	if (!err && profile__opts(p)->by_process) {
		err = escape_json(sb, profile__proc_name(p, ref->proc));
		if (!err)
			err = strbuf_addf(sb, " (%u) / ", ref->pid);
	}
	if (!err)
		err = escape_json(sb, profile__proc_thread_name(p, ref->proc, ref->tid));
	if (!err)
		err = strbuf_addf(sb, " (%u)\"", ref->tid);
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
		err = escape_json(sb, profile__proc_name(p, refs[0].proc));
	if (!err)
		err = strbuf_addf(sb, " (%u)\",\n", refs[0].pid);
	return err;
}

/* The frames in order of first use, as JSON objects; fills map (agg frame id -> index). */
static int add_frames(struct strbuf *sb, const struct profile *p, const struct stack_ref *refs,
		      size_t n, uint32_t *map)
{
	const struct agg *agg = profile__agg(p);
	const struct symtab *st = profile__symtab(p);
	uint32_t next = 0;
	int err = strbuf_add(sb, "\"shared\":{\"frames\":[", 20);

	for (size_t i = 0; i < n && !err; i++) {
		const struct agg_stack *s = agg__stack(agg, refs[i].index);
		const uint32_t *ids = agg__stack_frames(agg, s);

		for (uint32_t j = 0; j < s->nframes && !err; j++) {
			const struct agg_frame *fr = agg__frame(agg, ids[j]);

			if (map[ids[j]] != NO_INDEX)
				continue;
			err = next ? strbuf_add(sb, ",\n{", 3) : strbuf_add(sb, "\n{", 2);
			map[ids[j]] = next++;
			if (!err)
				err = add_str_member(sb, "name", symtab__func_name(st, fr->func));
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
	return err;
}

/* One "sampled" profile for the stacks refs[0..n) of one thread. */
static int add_profile(struct strbuf *sb, const struct profile *p, const struct stack_ref *refs,
		       size_t n, const uint32_t *map)
{
	const struct agg *agg = profile__agg(p);
	uint64_t period_ns = profile__period_ns(p), weight = period_ns ? period_ns : 1, end = 0;
	size_t i;
	int err;

	for (i = 0; i < n; i++)
		end += agg__stack(agg, refs[i].index)->count * weight;
	err = strbuf_add(sb, "{\"type\":\"sampled\",", 18);
	if (!err)
		err = add_profile_name(sb, p, &refs[0]);
	if (!err)
		err = strbuf_addf(sb, ",\"unit\":\"%s\",\"startValue\":0,\"endValue\":%llu,\n"
				  "\"samples\":[",
				  period_ns ? "nanoseconds" : "none", (unsigned long long)end);
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

int out_speedscope_write(FILE *f, const struct profile *p)
{
	const struct agg *agg = profile__agg(p);
	size_t n = agg__nstacks(agg), nframes = agg__nframes(agg), i, start, nprofiles = 0;
	struct stack_ref *refs = calloc(n ? n : 1, sizeof(*refs));
	uint32_t *map = malloc((nframes ? nframes : 1) * sizeof(*map));
	uint64_t best = 0, weight;
	size_t active = 0;
	struct strbuf sb = { 0 };
	int err = 0;

	if (!refs || !map) {
		err = -ENOMEM;
		goto out;
	}
	memset(map, 0xff, (nframes ? nframes : 1) * sizeof(*map));
	for (i = 0; i < n; i++) {
		const struct agg_stack *s = agg__stack(agg, i);

		refs[i] = (struct stack_ref){ .pid = s->pid, .proc = s->proc, .tid = s->tid,
					      .index = i };
	}
	/* group by thread of a process lifetime; within one, the agg's order (first seen) */
	qsort(refs, n, sizeof(*refs), cmp_stack_ref);

	err = strbuf_add(&sb, "{", 1);
	if (!err)
		err = add_str_member(&sb, "$schema", SCHEMA_URL);
	if (!err)
		err = strbuf_add(&sb, ",", 1);
	if (!err)
		err = add_str_member(&sb, "exporter", "pywalk " PYWALK_VERSION);
	if (!err)
		err = add_doc_name(&sb, p, refs, n);
	if (!err)
		err = add_frames(&sb, p, refs, n, map);
	if (!err)
		err = strbuf_add(&sb, "\"profiles\":[", 12);
	for (start = 0; start < n && !err; start = i) {
		weight = 0;
		for (i = start; i < n && refs[i].proc == refs[start].proc &&
				refs[i].tid == refs[start].tid;
		     i++)
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
	if (!err)
		err = strbuf_addf(&sb, "],\n\"activeProfileIndex\":%zu}\n", active);
	if (!err && fwrite(sb.buf, 1, sb.len, f) != sb.len)
		err = -EIO;
	if (!err && ferror(f))
		err = -EIO;
out:
	strbuf_free(&sb);
	free(map);
	free(refs);
	return err;
}
