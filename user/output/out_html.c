// SPDX-License-Identifier: MIT
/* A self-contained interactive flame graph: user/output/assets/flame.html (embedded at build time)
 * with the profile spliced in as JSON. The stacks are merged into a call tree here and sent
 * as a string table, a frame table and the tree's nodes in preorder ([frame, depth, self
 * samples] each), which is far smaller than one array per stack and lets the page rebuild
 * the layout in one linear pass. No data ever goes through HTML parsing: names are JSON
 * strings with '<', '>' and '&' escaped, read with JSON.parse and drawn on a canvas, where
 * the page shows the unsafe code points (listed in the data) as \uXXXX text. */
#define _GNU_SOURCE /* memmem */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/calltree.h"
#include "lib/pywalk.h"
#include "lib/escape.h"
#include "lib/json.h"
#include "output/out.h"
#include "lib/strtab.h"

#include "flame_html.h" /* generated from user/output/assets/flame.html: flame_html[_len] */

#define MARK_TITLE "@PYWALK_TITLE@"
#define MARK_DATA "@PYWALK_DATA@"

/* "nodes":[frame,depth,self,...] in preorder, children by label; the root is implicit.
 * pos[node id] = its index in the page (0 the root). */
static void add_nodes(const struct calltree *t, struct json *w, uint32_t *pos)
{
	uint32_t *order = calltree_preorder(t);

	json_key(w, "nodes");
	json_begin_array(w);
	if (!order) {
		json_fail(w, -ENOMEM);
		return;
	}
	for (size_t i = 0; i < t->nnodes; i++)
		pos[order[i]] = (uint32_t)i;
	/* order[0] is the root */
	for (size_t i = 1; i < t->nnodes && !json_error(w); i++) {
		const struct calltree_node *n = &t->nodes[order[i]];

		/* a line break every 8 nodes keeps the file readable for diff and grep */
		if ((i - 1) % 8 == 0)
			json_break(w);
		json_uint(w, n->frame);
		json_uint(w, n->depth);
		json_uint(w, n->self);
	}
	json_end_array(w);
	free(order);
}

/* "unsafe":[first,last,...]: the non-ASCII code points the page must not draw raw, from
 * the one list every writer uses, so the page cannot drift from the other outputs. */
static void add_unsafe(struct json *w)
{
	json_key(w, "unsafe");
	json_begin_array(w);
	for (size_t i = 0; i < escape_unsafe_nranges; i++) {
		uint32_t lo = escape_unsafe_ranges[i].first, hi = escape_unsafe_ranges[i].last;

		if (hi < 0x80)
			continue; /* ASCII controls: the page shows them as before */
		json_uint(w, lo < 0x80 ? 0x80 : lo);
		json_uint(w, hi);
	}
	json_end_array(w);
}

struct who_ref {
	uint32_t proc, tid;
	size_t stack;
};

static int cmp_who(const void *a, const void *b)
{
	const struct who_ref *x = a, *y = b;

	if (x->proc != y->proc)
		return x->proc < y->proc ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return (x->stack > y->stack) - (x->stack < y->stack);
}

/* "threads":[["thread (TID)","comm (PID)"],...],"stacks":[node,thread,samples,...]: what
 * each thread counted at each node, for the page's thread and process filter. */
static void add_threads(const struct calltree *t, struct json *w, const uint32_t *pos)
{
	const struct agg *agg = profile__agg(t->p);
	size_t n = agg__nstacks(agg), nthreads = 0, i;
	struct who_ref *wr = malloc((n ? n : 1) * sizeof(*wr));
	uint32_t *thread = malloc((n ? n : 1) * sizeof(*thread));

	json_key(w, "threads");
	json_begin_array(w);
	if (!wr || !thread) {
		json_fail(w, -ENOMEM);
		goto out;
	}
	for (i = 0; i < n; i++) {
		const struct agg_stack *s = agg__stack(agg, i);

		wr[i] = (struct who_ref){ .proc = s->proc, .tid = s->tid, .stack = i };
	}
	qsort(wr, n, sizeof(*wr), cmp_who);
	for (i = 0; i < n && !json_error(w); i++) {
		const struct profile_process *pr;
		char tag[PROFILE_TAG_SIZE];

		if (i && wr[i].proc == wr[i - 1].proc && wr[i].tid == wr[i - 1].tid) {
			thread[wr[i].stack] = (uint32_t)nthreads - 1;
			continue;
		}
		thread[wr[i].stack] = (uint32_t)nthreads++;
		pr = profile__process(t->p, wr[i].proc);
		profile__process_tag(t->p, wr[i].proc, tag, sizeof(tag));
		json_break(w);
		json_begin_array(w);
		json_string_begin(w);
		json_string_partf(w, "%s (%u)",
				  profile__proc_thread_name(t->p, wr[i].proc, wr[i].tid),
				  wr[i].tid);
		json_string_end(w);
		json_string_begin(w);
		json_string_partf(w, "%s%s", pr ? pr->comm : "?", tag);
		json_string_end(w);
		json_end_array(w);
	}
	json_end_array(w);
	json_break(w);
	json_key(w, "stacks");
	json_begin_array(w);
	for (i = 0; i < n && !json_error(w); i++) {
		if (i && i % 8 == 0)
			json_break(w);
		json_uint(w, pos[t->stack_node[i]]);
		json_uint(w, thread[i]);
		json_uint(w, agg__stack(agg, i)->count);
	}
	json_end_array(w);
out:
	free(wr);
	free(thread);
}

/* --async: "tasks":["name",...],"stack_tasks":[task + 1 or 0, one per stack as in
 * "stacks"]: the task each stack's thread was running, for the page's filter; left out when
 * no stack has one. */
static void add_tasks(const struct calltree *t, struct json *w)
{
	const struct agg *agg = profile__agg(t->p);
	size_t n = agg__nstacks(agg), i;
	uint32_t *task = calloc(n ? n : 1, sizeof(*task));
	struct strtab *names = strtab__new();
	char buf[256];

	if (!task || !names) {
		json_fail(w, -ENOMEM);
		goto out;
	}
	for (i = 0; i < n; i++) {
		const struct agg_stack *s = agg__stack(agg, i);
		const char *name = profile__stack_task(t->p, agg__stack_frames(agg, s), s->nframes,
						       buf, sizeof(buf));
		int64_t id = name ? strtab__intern(names, name) : -1;

		if (name && id < 0) {
			json_fail(w, (int)id);
			goto out;
		}
		task[i] = (uint32_t)(id + 1);
	}
	if (!strtab__count(names))
		goto out;
	json_break(w);
	json_key(w, "tasks");
	json_begin_array(w);
	for (i = 0; i < strtab__count(names); i++)
		json_string(w, strtab__get(names, i));
	json_end_array(w);
	json_break(w);
	json_key(w, "stack_tasks");
	json_begin_array(w);
	for (i = 0; i < n; i++) {
		if (i && i % 32 == 0)
			json_break(w);
		json_uint(w, task[i]);
	}
	json_end_array(w);
out:
	strtab__free(names);
	free(task);
}

/* "kernel":[name string ids]: the frames the page colours as kernel (or native) code, left
 * out when there are none. By name, which both of the page's views (by line, by function)
 * keep. */
static void add_kind_names(const struct calltree *t, struct json *w, const char *key,
			   enum frame_kind kind)
{
	bool first = true;

	for (size_t i = 0; i < t->nframes; i++) {
		if (t->frames[i].kind != kind)
			continue;
		if (first) {
			json_key(w, key);
			json_begin_array(w);
		}
		json_uint(w, t->frames[i].name);
		first = false;
	}
	if (!first) {
		json_end_array(w);
		json_break(w);
	}
}

/* The page title (HTML text) and the document title inside the data (JSON). */
static int make_title(const struct profile *p, struct strbuf *title)
{
	const struct agg *agg = profile__agg(p);

	if (!agg__nstacks(agg))
		return strbuf_addf(title, "pywalk flame graph (no samples)");
	if (profile__opts(p)->by_process)
		return strbuf_addf(title, "pywalk flame graph: several processes");
	{
		uint32_t proc = agg__stack(agg, 0)->proc;
		const struct profile_process *pr = profile__process(p, proc);
		char tag[PROFILE_TAG_SIZE];

		profile__process_tag(p, proc, tag, sizeof(tag));
		return strbuf_addf(title, "pywalk flame graph: %s%s", pr ? pr->comm : "?", tag);
	}
}

static int add_data(const struct calltree *h, struct strbuf *sb, const char *title)
{
	const struct profile_sampling *smp = profile__sampling(h->p);
	uint32_t *pos = malloc((h->nnodes ? h->nnodes : 1) * sizeof(*pos));
	struct json w;

	/* the data sits in a <script> element: no '<', '>' or '&' in it */
	json_init(&w, sb, true);
	json_begin_object(&w);
	json_key_uint(&w, "version", 1);
	json_key_string(&w, "exporter", "pywalk " PYWALK_VERSION);
	json_key_string(&w, "title", title);
	add_unsafe(&w);
	json_key_string(&w, "unit", profile__counts_ns(h->p) ? "nanoseconds" : "samples");
	json_key_uint(&w, "total", agg__total(profile__agg(h->p)));
	json_key_uint(&w, "root_self", h->nodes[0].self);
	json_key_uint(&w, "frequency_hz", smp->frequency_hz);
	json_key_uint(&w, "period_ns", profile__period_ns(h->p));
	json_key_uint(&w, "start_ns", smp->start_ns);
	json_key_uint(&w, "duration_ns", profile__duration_ns(h->p));
	json_break(&w);
	json_key(&w, "strings");
	json_begin_array(&w);
	for (size_t i = 0; i < strtab__count(h->strs) && !json_error(&w); i++) {
		json_break(&w);
		json_string(&w, strtab__get(h->strs, i));
	}
	json_end_array(&w);
	json_break(&w);
	/* frames: [name, file (-1: a root frame), line] flattened */
	json_key(&w, "frames");
	json_begin_array(&w);
	for (size_t i = 0; i < h->nframes && !json_error(&w); i++) {
		const struct calltree_frame *f = &h->frames[i];

		if (i && i % 8 == 0)
			json_break(&w);
		json_uint(&w, f->name);
		json_int(&w, f->file == CALLTREE_NONE ? -1 : (int64_t)f->file);
		json_int(&w, f->line);
	}
	json_end_array(&w);
	json_break(&w);
	add_kind_names(h, &w, "kernel", FRAME_KERNEL);
	add_kind_names(h, &w, "native", FRAME_NATIVE);
	if (pos)
		add_nodes(h, &w, pos);
	else
		json_fail(&w, -ENOMEM);
	json_break(&w);
	add_threads(h, &w, pos);
	add_tasks(h, &w);
	json_end_object(&w);
	free(pos);
	return json_finish(&w);
}

/* Write the template from *pos up to `mark`, then step over the mark. */
static int put_until(FILE *f, const char **pos, const char *end, const char *mark)
{
	const char *at = memmem(*pos, end - *pos, mark, strlen(mark));

	if (!at)
		return -EINVAL; /* template and writer out of step: a build bug */
	if (fwrite(*pos, 1, at - *pos, f) != (size_t)(at - *pos))
		return -EIO;
	*pos = at + strlen(mark);
	return 0;
}

int out_html_write(FILE *f, const struct profile *p)
{
	const char *pos = (const char *)flame_html, *end = pos + flame_html_len;
	struct calltree t = { 0 };
	struct strbuf title = { 0 }, esc = { 0 }, data = { 0 };
	int err;

	err = calltree_build(&t, p);
	if (!err)
		err = make_title(p, &title);
	if (!err)
		err = escape_html(&esc, title.buf);
	if (!err)
		err = add_data(&t, &data, title.buf);
	if (!err)
		err = put_until(f, &pos, end, MARK_TITLE);
	if (!err && fwrite(esc.buf, 1, esc.len, f) != esc.len)
		err = -EIO;
	if (!err)
		err = put_until(f, &pos, end, MARK_DATA);
	if (!err && fwrite(data.buf, 1, data.len, f) != data.len)
		err = -EIO;
	if (!err && fwrite(pos, 1, end - pos, f) != (size_t)(end - pos))
		err = -EIO;
	if (!err && ferror(f))
		err = -EIO;
	calltree_free(&t);
	strbuf_free(&title);
	strbuf_free(&esc);
	strbuf_free(&data);
	return err;
}
