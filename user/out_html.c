// SPDX-License-Identifier: MIT
/* A self-contained interactive flame graph: user/assets/flame.html (embedded at build time)
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

#include "calltree.h"
#include "cmd.h"
#include "escape.h"
#include "out.h"

#include "flame_html.h" /* generated from user/assets/flame.html: flame_html[_len] */

#define MARK_TITLE "@PYWALK_TITLE@"
#define MARK_DATA "@PYWALK_DATA@"

/* "nodes":[frame,depth,self,...] in preorder, children by label; the root is implicit. */
static int add_nodes(const struct calltree *t, struct strbuf *sb)
{
	uint32_t *order = calltree_preorder(t);
	int err = strbuf_add(sb, "\"nodes\":[", 9);

	if (!order)
		err = -ENOMEM;
	/* order[0] is the root */
	for (size_t i = 1; i < t->nnodes && !err; i++) {
		const struct calltree_node *n = &t->nodes[order[i]];

		/* a line break every 8 nodes keeps the file readable for diff and grep */
		err = strbuf_addf(sb, "%s%u,%u,%llu", i == 1 ? "\n" : (i - 1) % 8 ? "," : ",\n",
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
	int err;

	err = strbuf_addf(sb, "{\"version\":1,\"exporter\":\"pywalk %s\",\"title\":",
			  PYWALK_VERSION);
	if (!err)
		err = add_json_str(sb, title);
	if (!err)
		err = add_unsafe(sb);
	if (!err)
		err = strbuf_addf(sb,
				  ",\"total\":%llu,\"root_self\":%llu,\"frequency_hz\":%u,"
				  "\"period_ns\":%llu,\"start_ns\":%llu,\"duration_ns\":%llu,\n"
				  "\"strings\":[",
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
		err = add_nodes(h, sb);
	if (!err)
		err = strbuf_add(sb, "}", 1);
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
