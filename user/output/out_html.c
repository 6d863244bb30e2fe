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
#include "output/out.h"

#include "flame_html.h" /* generated from user/output/assets/flame.html: flame_html[_len] */

#define MARK_TITLE "@PYWALK_TITLE@"
#define MARK_DATA "@PYWALK_DATA@"

/* "nodes":[frame,depth,self,...] in preorder, children by label; the root is implicit.
 * pos[node id] = its index in the page (0 the root). */
static int add_nodes(const struct calltree *t, struct strbuf *sb, uint32_t *pos)
{
	uint32_t *order = calltree_preorder(t);
	int err = strbuf_add(sb, "\"nodes\":[", 9);

	if (!order)
		err = -ENOMEM;
	for (size_t i = 0; i < t->nnodes && !err; i++)
		pos[order[i]] = (uint32_t)i;
	/* order[0] is the root */
	for (size_t i = 1; i < t->nnodes && !err; i++) {
		const struct calltree_node *n = &t->nodes[order[i]];

		/* a line break every 8 nodes keeps the file readable for diff and grep */
		err = strbuf_addf(sb, "%s%u,%u,%llu",
				  i == 1	? "\n"
				  : (i - 1) % 8 ? ","
						: ",\n",
				  n->frame, n->depth, (unsigned long long)n->self);
	}
	if (!err)
		err = strbuf_add(sb, "]", 1);
	free(order);
	return err;
}

static int add_json_str(struct strbuf *sb, const char *s)
{
	int err = strbuf_add(sb, "\"", 1);

	if (!err)
		err = escape_json_script(sb, s);
	if (!err)
		err = strbuf_add(sb, "\"", 1);
	return err;
}

/* "unsafe":[first,last,...]: the non-ASCII code points the page must not draw raw, from
 * the one list every writer uses, so the page cannot drift from the other outputs. */
static int add_unsafe(struct strbuf *sb)
{
	int err = strbuf_add(sb, ",\"unsafe\":[", 11);
	bool first = true;

	for (size_t i = 0; i < escape_unsafe_nranges && !err; i++) {
		uint32_t lo = escape_unsafe_ranges[i].first, hi = escape_unsafe_ranges[i].last;

		if (hi < 0x80)
			continue; /* ASCII controls: the page shows them as before */
		err = strbuf_addf(sb, "%s%u,%u", first ? "" : ",", lo < 0x80 ? 0x80 : lo, hi);
		first = false;
	}
	if (!err)
		err = strbuf_add(sb, "]", 1);
	return err;
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

/* ,"threads":[["thread (TID)","comm (PID)"],...],"stacks":[node,thread,samples,...]: what
 * each thread counted at each node, for the page's thread and process filter. */
static int add_threads(const struct calltree *t, struct strbuf *sb, const uint32_t *pos)
{
	const struct agg *agg = profile__agg(t->p);
	size_t n = agg__nstacks(agg), nthreads = 0, i;
	struct who_ref *w = malloc((n ? n : 1) * sizeof(*w));
	uint32_t *thread = malloc((n ? n : 1) * sizeof(*thread));
	int err = w && thread ? strbuf_addf(sb, ",\n\"threads\":[") : -ENOMEM;

	for (i = 0; i < n && !err; i++) {
		const struct agg_stack *s = agg__stack(agg, i);

		w[i] = (struct who_ref){ .proc = s->proc, .tid = s->tid, .stack = i };
	}
	if (!err)
		qsort(w, n, sizeof(*w), cmp_who);
	for (i = 0; i < n && !err; i++) {
		const struct profile_process *pr;
		char tag[PROFILE_TAG_SIZE];
		struct strbuf label = { 0 };

		if (i && w[i].proc == w[i - 1].proc && w[i].tid == w[i - 1].tid) {
			thread[w[i].stack] = (uint32_t)nthreads - 1;
			continue;
		}
		thread[w[i].stack] = (uint32_t)nthreads++;
		pr = profile__process(t->p, w[i].proc);
		profile__process_tag(t->p, w[i].proc, tag, sizeof(tag));
		err = strbuf_addf(&label, "%s (%u)",
				  profile__proc_thread_name(t->p, w[i].proc, w[i].tid), w[i].tid);
		if (!err)
			err = strbuf_add(sb, nthreads > 1 ? ",\n[" : "\n[", nthreads > 1 ? 3 : 2);
		if (!err)
			err = add_json_str(sb, label.buf);
		strbuf_free(&label);
		if (!err)
			err = strbuf_addf(&label, "%s%s", pr ? pr->comm : "?", tag);
		if (!err)
			err = strbuf_add(sb, ",", 1);
		if (!err)
			err = add_json_str(sb, label.buf);
		strbuf_free(&label);
		if (!err)
			err = strbuf_add(sb, "]", 1);
	}
	if (!err)
		err = strbuf_addf(sb, "],\n\"stacks\":[");
	for (i = 0; i < n && !err; i++)
		err = strbuf_addf(sb, "%s%u,%u,%llu", i ? (i % 8 ? "," : ",\n") : "",
				  pos[t->stack_node[i]], thread[i],
				  (unsigned long long)agg__stack(agg, i)->count);
	if (!err)
		err = strbuf_add(sb, "]", 1);
	free(w);
	free(thread);
	return err;
}

/* The page title (HTML text) and the document title inside the data (JSON). */
/* "kernel":[name string ids],: the frames the page colours as kernel (or native) code,
 * left out when there are none. By name, which both of the page's views (by line, by
 * function) keep. */
static int add_kind_names(const struct calltree *t, struct strbuf *sb, const char *key,
			  enum frame_kind kind)
{
	bool first = true;
	int err = 0;

	for (size_t i = 0; i < t->nframes && !err; i++) {
		if (t->frames[i].kind != kind)
			continue;
		if (first)
			err = strbuf_addf(sb, "\"%s\":[", key);
		if (!err)
			err = strbuf_addf(sb, first ? "%u" : ",%u", t->frames[i].name);
		first = false;
	}
	return err || first ? err : strbuf_add(sb, "],\n", 3);
}

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
	uint32_t *pos = NULL;
	int err;

	err = strbuf_addf(sb,
			  "{\"version\":1,\"exporter\":\"pywalk %s\",\"title\":", PYWALK_VERSION);
	if (!err)
		err = add_json_str(sb, title);
	if (!err)
		err = add_unsafe(sb);
	if (!err)
		err = strbuf_addf(
			sb,
			",\"unit\":\"%s\",\"total\":%llu,\"root_self\":%llu,\"frequency_hz\":%u,"
			"\"period_ns\":%llu,\"start_ns\":%llu,\"duration_ns\":%llu,\n"
			"\"strings\":[",
			profile__counts_ns(h->p) ? "nanoseconds" : "samples",
			(unsigned long long)agg__total(profile__agg(h->p)),
			(unsigned long long)h->nodes[0].self, smp->frequency_hz,
			(unsigned long long)profile__period_ns(h->p),
			(unsigned long long)smp->start_ns,
			(unsigned long long)profile__duration_ns(h->p));
	for (size_t i = 0; i < strtab__count(h->strs) && !err; i++) {
		err = strbuf_add(sb, i ? ",\n" : "\n", i ? 2 : 1);
		if (!err)
			err = add_json_str(sb, strtab__get(h->strs, i));
	}
	/* frames: [name, file (-1: a root frame), line] flattened */
	if (!err)
		err = strbuf_add(sb, "],\n\"frames\":[", 13);
	for (size_t i = 0; i < h->nframes && !err; i++) {
		const struct calltree_frame *f = &h->frames[i];

		err = strbuf_addf(sb, "%s%u,%lld,%d", i ? (i % 8 ? "," : ",\n") : "", f->name,
				  f->file == CALLTREE_NONE ? -1ll : (long long)f->file, f->line);
	}
	if (!err)
		err = strbuf_add(sb, "],\n", 3);
	if (!err)
		err = add_kind_names(h, sb, "kernel", FRAME_KERNEL);
	if (!err)
		err = add_kind_names(h, sb, "native", FRAME_NATIVE);
	pos = malloc((h->nnodes ? h->nnodes : 1) * sizeof(*pos));
	if (!err && !pos)
		err = -ENOMEM;
	if (!err)
		err = add_nodes(h, sb, pos);
	if (!err)
		err = add_threads(h, sb, pos);
	if (!err)
		err = strbuf_add(sb, "}", 1);
	free(pos);
	return err;
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
