// SPDX-License-Identifier: MIT
/* A self-contained interactive flame graph: user/assets/flame.html (embedded at build time)
 * with the profile spliced in as JSON. The stacks are merged into a call tree here and sent
 * as a string table, a frame table and the tree's nodes in preorder ([frame, depth, self
 * samples] each), which is far smaller than one array per stack and lets the page rebuild
 * the layout in one linear pass. No data ever goes through HTML parsing: names are JSON
 * strings with '<', '>' and '&' escaped, read with JSON.parse and drawn on a canvas, where
 * the page shows the unsafe code points (listed in the data) as \uXXXX text. */
#define _GNU_SOURCE /* qsort_r */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "escape.h"
#include "htab.h"
#include "out.h"
#include "strtab.h"
#include "util.h"

#include "flame_html.h" /* generated from user/assets/flame.html: flame_html[_len] */

#define NONE UINT32_MAX
#define MARK_TITLE "@PYWALK_TITLE@"
#define MARK_DATA "@PYWALK_DATA@"

/* A frame as the page shows it: a Python function at a line, or a root frame
 * ("comm (PID)", "comm (TID)") which has no file. */
struct hframe {
	uint32_t name, file; /* string ids; file NONE for root frames */
	int32_t line;
};

/* A call-tree node; node 0 is the root ("all"). */
struct node {
	uint32_t frame, parent, first_child, next_sibling, depth;
	uint64_t self; /* samples whose stack ends here */
};

struct html {
	const struct profile *p;
	struct strtab *strs;
	struct hframe *frames;
	size_t nframes, frames_cap;
	uint32_t *agg_map; /* agg frame id -> hframe index, NONE until used */
	uint32_t *root_map; /* string id of a root frame's label -> hframe index */
	size_t root_map_cap;
	uint32_t *rank; /* hframe index -> position in label order */
	struct node *nodes;
	size_t nnodes, nodes_cap;
	struct htab child_index; /* (parent, frame) -> node */
	struct strbuf tmp;
};

static int64_t add_hframe(struct html *h, uint32_t name, uint32_t file, int32_t line)
{
	int err = grow_array((void **)&h->frames, &h->frames_cap, h->nframes + 1,
			     sizeof(*h->frames));

	if (err)
		return err;
	h->frames[h->nframes] = (struct hframe){ .name = name, .file = file, .line = line };
	return (int64_t)h->nframes++;
}

/* hframe of agg frame `id`, created on first use */
static int64_t py_frame(struct html *h, uint32_t id)
{
	const struct agg_frame *fr = agg__frame(profile__agg(h->p), id);
	const struct symtab *st = profile__symtab(h->p);
	int64_t name, file, f;

	if (h->agg_map[id] != NONE)
		return h->agg_map[id];
	name = strtab__intern(h->strs, symtab__func_name(st, fr->func));
	file = strtab__intern(h->strs, symtab__func_file(st, fr->func));
	if (name < 0 || file < 0)
		return name < 0 ? name : file;
	f = add_hframe(h, (uint32_t)name, (uint32_t)file, fr->line);
	if (f >= 0)
		h->agg_map[id] = (uint32_t)f;
	return f;
}

/* hframe of a root frame "COMM TAG" (TAG: " (PID...)" or " (TID)"); equal labels share one */
static int64_t root_frame(struct html *h, const char *comm, const char *tag)
{
	int64_t label, f;
	size_t old = h->root_map_cap;
	int err;

	strbuf_reset(&h->tmp);
	err = strbuf_addf(&h->tmp, "%s%s", comm, tag);
	if (err)
		return err;
	label = strtab__intern(h->strs, h->tmp.buf);
	if (label < 0)
		return label;
	err = grow_array((void **)&h->root_map, &h->root_map_cap, (size_t)label + 1,
			 sizeof(*h->root_map));
	if (err)
		return err;
	if (h->root_map_cap > old)
		memset(h->root_map + old, 0xff, (h->root_map_cap - old) * sizeof(*h->root_map));
	if (h->root_map[label] != NONE)
		return h->root_map[label];
	f = add_hframe(h, (uint32_t)label, NONE, 0);
	if (f >= 0)
		h->root_map[label] = (uint32_t)f;
	return f;
}

struct child_key {
	uint32_t parent, frame;
};

static bool child_eq(uint32_t id, const void *key, void *ctx)
{
	const struct html *h = ctx;
	const struct child_key *k = key;

	return h->nodes[id].parent == k->parent && h->nodes[id].frame == k->frame;
}

/* The child of `parent` for hframe `frame`, created on first use; node id or -errno. */
static int64_t child(struct html *h, uint32_t parent, int64_t frame)
{
	struct child_key k = { parent, (uint32_t)frame };
	uint64_t hash = hash_mix64((uint64_t)parent << 32 | (uint32_t)frame);
	struct node *n;
	uint32_t id;
	int err;

	if (frame < 0)
		return frame;
	if (htab_find(&h->child_index, hash, child_eq, &k, h, &id))
		return id;
	if (h->nnodes >= NONE - 1)
		return -E2BIG;
	err = grow_array((void **)&h->nodes, &h->nodes_cap, h->nnodes + 1, sizeof(*h->nodes));
	if (!err)
		err = htab_insert(&h->child_index, hash, (uint32_t)h->nnodes);
	if (err)
		return err;
	id = (uint32_t)h->nnodes++;
	n = &h->nodes[id];
	*n = (struct node){ .frame = (uint32_t)frame, .parent = parent, .first_child = NONE,
			    .next_sibling = h->nodes[parent].first_child,
			    .depth = h->nodes[parent].depth + 1 };
	h->nodes[parent].first_child = id;
	return id;
}

/* Merge every stack into the tree, under its probe, process and thread root frames if
 * asked. */
static int build_tree(struct html *h)
{
	const struct agg *agg = profile__agg(h->p);
	const struct profile_opts *opts = profile__opts(h->p);
	int err;

	err = grow_array((void **)&h->nodes, &h->nodes_cap, 1, sizeof(*h->nodes));
	if (err)
		return err;
	h->nodes[0] = (struct node){ .frame = NONE, .parent = NONE, .first_child = NONE,
				     .next_sibling = NONE };
	h->nnodes = 1;
	for (size_t i = 0; i < agg__nstacks(agg); i++) {
		const struct agg_stack *s = agg__stack(agg, i);
		const uint32_t *ids = agg__stack_frames(agg, s);
		const struct profile_process *pr = profile__process(h->p, s->proc);
		char tag[PROFILE_TAG_SIZE];
		int64_t cur = 0;

		/* trace with several probes: each probe's stacks under a root of its own */
		if (opts->nprobes > 1) {
			const char *probe = s->probe < PW_MAX_PROBES ? opts->probe_names[s->probe]
								     : NULL;

			cur = child(h, 0, root_frame(h, probe ? probe : "?", ""));
		}
		if (cur >= 0 && opts->by_process) {
			profile__process_tag(h->p, s->proc, tag, sizeof(tag));
			cur = child(h, (uint32_t)cur, root_frame(h, pr ? pr->comm : "?", tag));
		}
		if (cur >= 0 && opts->by_thread) {
			snprintf(tag, sizeof(tag), " (%u)", s->tid);
			cur = child(h, (uint32_t)cur,
				    root_frame(h, profile__proc_thread_name(h->p, s->proc, s->tid),
					       tag));
		}
		for (uint32_t j = 0; j < s->nframes && cur >= 0; j++)
			cur = child(h, (uint32_t)cur, py_frame(h, ids[j]));
		if (cur < 0)
			return (int)cur;
		h->nodes[cur].self += s->count;
	}
	return 0;
}

static int cmp_hframe(const void *a, const void *b, void *ctx)
{
	const struct html *h = ctx;
	const struct hframe *x = &h->frames[*(const uint32_t *)a];
	const struct hframe *y = &h->frames[*(const uint32_t *)b];
	int c = strcmp(strtab__get(h->strs, x->name), strtab__get(h->strs, y->name));

	if (c)
		return c;
	if (x->file != y->file) {
		if (x->file == NONE || y->file == NONE)
			return x->file == NONE ? -1 : 1;
		c = strcmp(strtab__get(h->strs, x->file), strtab__get(h->strs, y->file));
		if (c)
			return c;
	}
	return x->line < y->line ? -1 : x->line > y->line;
}

static int cmp_rank(const void *a, const void *b, void *ctx)
{
	const struct html *h = ctx;
	uint32_t x = h->rank[h->nodes[*(const uint32_t *)a].frame];
	uint32_t y = h->rank[h->nodes[*(const uint32_t *)b].frame];

	return x < y ? -1 : x > y;
}

/* Siblings are ordered by label, as in flamegraph.pl, so equal profiles give equal files
 * and a function sits at the same place in every run. */
static int rank_frames(struct html *h)
{
	uint32_t *order = malloc((h->nframes ? h->nframes : 1) * sizeof(*order));

	h->rank = malloc((h->nframes ? h->nframes : 1) * sizeof(*h->rank));
	if (!order || !h->rank) {
		free(order);
		return -ENOMEM;
	}
	for (size_t i = 0; i < h->nframes; i++)
		order[i] = (uint32_t)i;
	qsort_r(order, h->nframes, sizeof(*order), cmp_hframe, h);
	for (size_t i = 0; i < h->nframes; i++)
		h->rank[order[i]] = (uint32_t)i;
	free(order);
	return 0;
}

/* "nodes":[frame,depth,self,...] in preorder, children by label; the root is implicit. */
static int add_nodes(struct html *h, struct strbuf *sb)
{
	uint32_t *stack = malloc(h->nnodes * sizeof(*stack));
	uint32_t *kids = malloc(h->nnodes * sizeof(*kids));
	size_t top = 0, emitted = 0;
	int err = strbuf_add(sb, "\"nodes\":[", 9);

	if (!stack || !kids)
		err = -ENOMEM;
	if (!err)
		stack[top++] = 0;
	while (top && !err) {
		uint32_t id = stack[--top], c;
		const struct node *n = &h->nodes[id];
		size_t nkids = 0;

		/* a line break every 8 nodes keeps the file readable for diff and grep */
		if (id)
			err = strbuf_addf(sb, "%s%u,%u,%llu",
					  !emitted ? "\n" : emitted % 8 ? "," : ",\n", n->frame,
					  n->depth, (unsigned long long)n->self);
		emitted += id != 0;
		for (c = n->first_child; c != NONE; c = h->nodes[c].next_sibling)
			kids[nkids++] = c;
		qsort_r(kids, nkids, sizeof(*kids), cmp_rank, h);
		/* every node is pushed once, so nnodes slots are enough */
		while (nkids)
			stack[top++] = kids[--nkids];
	}
	if (!err)
		err = strbuf_add(sb, "]", 1);
	free(stack);
	free(kids);
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

static int add_data(struct html *h, struct strbuf *sb, const char *title)
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
		const struct hframe *f = &h->frames[i];

		err = strbuf_addf(sb, "%s%u,%lld,%d", i ? (i % 8 ? "," : ",\n") : "", f->name,
				  f->file == NONE ? -1ll : (long long)f->file, f->line);
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
	const struct agg *agg = profile__agg(p);
	const char *pos = (const char *)flame_html, *end = pos + flame_html_len;
	struct html h = { .p = p };
	struct strbuf title = { 0 }, esc = { 0 }, data = { 0 };
	size_t nagg = agg__nframes(agg);
	int err = 0;

	h.strs = strtab__new();
	h.agg_map = malloc((nagg ? nagg : 1) * sizeof(*h.agg_map));
	if (!h.strs || !h.agg_map) {
		err = -ENOMEM;
		goto out;
	}
	memset(h.agg_map, 0xff, (nagg ? nagg : 1) * sizeof(*h.agg_map));
	err = build_tree(&h);
	if (!err)
		err = rank_frames(&h);
	if (!err)
		err = make_title(p, &title);
	if (!err)
		err = escape_html(&esc, title.buf);
	if (!err)
		err = add_data(&h, &data, title.buf);
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
out:
	strtab__free(h.strs);
	free(h.frames);
	free(h.agg_map);
	free(h.root_map);
	free(h.rank);
	free(h.nodes);
	htab_free(&h.child_index);
	strbuf_free(&h.tmp);
	strbuf_free(&title);
	strbuf_free(&esc);
	strbuf_free(&data);
	return err;
}
