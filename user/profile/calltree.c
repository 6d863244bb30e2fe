// SPDX-License-Identifier: MIT
/* Stacks merged into a call tree: one node per distinct path from the root, frames shared
 * by (name, file, line), children ordered by label so outputs do not depend on the order
 * samples came in. */
#define _GNU_SOURCE /* qsort_r */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/calltree.h"
#include "lib/escape.h"
#include "lib/util.h"

#define NONE CALLTREE_NONE

static int64_t add_frame(struct calltree *t, uint32_t name, uint32_t file, int32_t line,
			 enum frame_kind kind)
{
	int err =
		grow_array((void **)&t->frames, &t->frames_cap, t->nframes + 1, sizeof(*t->frames));

	if (err)
		return err;
	t->frames[t->nframes] =
		(struct calltree_frame){ .name = name, .file = file, .line = line, .kind = kind };
	return (int64_t)t->nframes++;
}

static int64_t label_frame(struct calltree *t, int64_t label, enum frame_kind kind);

/* frame of agg frame `id`, created on first use */
static int64_t py_frame(struct calltree *t, uint32_t id)
{
	const struct agg_frame *fr = agg__frame(profile__agg(t->p), id);
	const struct symtab *st = profile__symtab(t->p);
	enum frame_kind kind = symtab__func_kind(st, fr->func);
	int64_t name, file, f;

	if (t->agg_map[id] != NONE)
		return t->agg_map[id];
	if (frame_kind_is_machine(kind)) {
		/* one box per function, whatever address in it ran: the name and its kind */
		char *label;

		if (asprintf(&label, "%s%s", symtab__func_name(st, fr->func),
			     frame_kind_suffix(kind)) < 0)
			return -ENOMEM;
		f = label_frame(t, strtab__intern(t->strs, label), kind);
		free(label);
		if (f >= 0)
			t->agg_map[id] = (uint32_t)f;
		return f;
	}
	name = strtab__intern(t->strs, symtab__func_name(st, fr->func));
	/* a pseudo-frame ("[off-cpu: sleeping]") has no file: a label, like a root frame */
	file = *symtab__func_file(st, fr->func)
		       ? strtab__intern(t->strs, symtab__func_file(st, fr->func))
		       : (int64_t)NONE;
	if (name < 0 || file < 0)
		return name < 0 ? name : file;
	f = add_frame(t, (uint32_t)name, (uint32_t)file, fr->line, kind);
	if (f >= 0)
		t->agg_map[id] = (uint32_t)f;
	return f;
}

/* The frame of label string `label` (a root frame, a machine code function): equal labels
 * share one. Root labels end in ")" and machine code labels in "]", so the two never meet. */
static int64_t label_frame(struct calltree *t, int64_t label, enum frame_kind kind)
{
	size_t old = t->root_map_cap;
	int64_t f;
	int err;

	if (label < 0)
		return label;
	err = grow_array((void **)&t->root_map, &t->root_map_cap, (size_t)label + 1,
			 sizeof(*t->root_map));
	if (err)
		return err;
	if (t->root_map_cap > old)
		memset(t->root_map + old, 0xff, (t->root_map_cap - old) * sizeof(*t->root_map));
	if (t->root_map[label] != NONE)
		return t->root_map[label];
	f = add_frame(t, (uint32_t)label, NONE, 0, kind);
	if (f >= 0)
		t->root_map[label] = (uint32_t)f;
	return f;
}

/* frame of a root frame "COMM TAG" (TAG: " (PID...)" or " (TID)"); equal labels share one */
static int64_t root_frame(struct calltree *t, struct strbuf *tmp, const char *comm, const char *tag)
{
	int err;

	strbuf_reset(tmp);
	err = strbuf_addf(tmp, "%s%s", comm, tag);
	if (err)
		return err;
	return label_frame(t, strtab__intern(t->strs, tmp->buf), FRAME_PSEUDO);
}

struct child_key {
	uint32_t parent, frame;
};

static bool child_eq(uint32_t id, const void *key, void *ctx)
{
	const struct calltree *t = ctx;
	const struct child_key *k = key;

	return t->nodes[id].parent == k->parent && t->nodes[id].frame == k->frame;
}

/* The child of `parent` for frame `frame`, created on first use; node id or -errno. */
static int64_t child(struct calltree *t, uint32_t parent, int64_t frame)
{
	struct child_key k = { parent, (uint32_t)frame };
	uint64_t hash = hash_mix64((uint64_t)parent << 32 | (uint32_t)frame);
	struct calltree_node *n;
	uint32_t id;
	int err;

	if (frame < 0)
		return frame;
	if (htab_find(&t->child_index, hash, child_eq, &k, t, &id))
		return id;
	if (t->nnodes >= NONE - 1)
		return -E2BIG;
	err = grow_array((void **)&t->nodes, &t->nodes_cap, t->nnodes + 1, sizeof(*t->nodes));
	if (!err)
		err = htab_insert(&t->child_index, hash, (uint32_t)t->nnodes);
	if (err)
		return err;
	id = (uint32_t)t->nnodes++;
	n = &t->nodes[id];
	*n = (struct calltree_node){ .frame = (uint32_t)frame,
				     .parent = parent,
				     .first_child = NONE,
				     .next_sibling = t->nodes[parent].first_child,
				     .depth = t->nodes[parent].depth + 1 };
	t->nodes[parent].first_child = id;
	return id;
}

/* Merge every stack into the tree, under its probe, process and thread root frames if
 * asked. */
static int merge_stacks(struct calltree *t)
{
	const struct agg *agg = profile__agg(t->p);
	const struct profile_opts *opts = profile__opts(t->p);
	struct strbuf tmp = { 0 };
	int err = 0;

	t->stack_node =
		malloc((agg__nstacks(agg) ? agg__nstacks(agg) : 1) * sizeof(*t->stack_node));
	if (!t->stack_node)
		return -ENOMEM;
	for (size_t i = 0; i < agg__nstacks(agg) && !err; i++) {
		const struct agg_stack *s = agg__stack(agg, i);
		const uint32_t *ids = agg__stack_frames(agg, s);
		const struct profile_process *pr = profile__process(t->p, s->proc);
		char tag[PROFILE_TAG_SIZE];
		int64_t cur = 0;

		/* trace with several probes: each probe's stacks under a root of its own */
		if (opts->nprobes > 1) {
			const char *probe =
				s->probe < PW_MAX_PROBES ? opts->probe_names[s->probe] : NULL;

			cur = child(t, 0, root_frame(t, &tmp, probe ? probe : "?", ""));
		}
		if (cur >= 0 && opts->by_process) {
			profile__process_tag(t->p, s->proc, tag, sizeof(tag));
			cur = child(t, (uint32_t)cur,
				    root_frame(t, &tmp, pr ? pr->comm : "?", tag));
		}
		if (cur >= 0 && opts->by_thread) {
			snprintf(tag, sizeof(tag), " (%u)", s->tid);
			cur = child(t, (uint32_t)cur,
				    root_frame(t, &tmp,
					       profile__proc_thread_name(t->p, s->proc, s->tid),
					       tag));
		}
		for (uint32_t j = 0; j < s->nframes && cur >= 0; j++)
			cur = child(t, (uint32_t)cur, py_frame(t, ids[j]));
		if (cur < 0) {
			err = (int)cur;
		} else {
			t->nodes[cur].self += s->count;
			t->stack_node[i] = (uint32_t)cur;
		}
	}
	strbuf_free(&tmp);
	return err;
}

static int cmp_frame(const void *a, const void *b, void *ctx)
{
	const struct calltree *t = ctx;
	const struct calltree_frame *x = &t->frames[*(const uint32_t *)a];
	const struct calltree_frame *y = &t->frames[*(const uint32_t *)b];
	int c = strcmp(strtab__get(t->strs, x->name), strtab__get(t->strs, y->name));

	if (c)
		return c;
	if (x->file != y->file) {
		if (x->file == NONE || y->file == NONE)
			return x->file == NONE ? -1 : 1;
		c = strcmp(strtab__get(t->strs, x->file), strtab__get(t->strs, y->file));
		if (c)
			return c;
	}
	return x->line < y->line ? -1 : x->line > y->line;
}

/* Siblings are ordered by label, so a function sits at the same place in every run. */
static int rank_frames(struct calltree *t)
{
	uint32_t *order = malloc((t->nframes ? t->nframes : 1) * sizeof(*order));

	t->rank = malloc((t->nframes ? t->nframes : 1) * sizeof(*t->rank));
	if (!order || !t->rank) {
		free(order);
		return -ENOMEM;
	}
	for (size_t i = 0; i < t->nframes; i++)
		order[i] = (uint32_t)i;
	qsort_r(order, t->nframes, sizeof(*order), cmp_frame, t);
	for (size_t i = 0; i < t->nframes; i++)
		t->rank[order[i]] = (uint32_t)i;
	free(order);
	return 0;
}

int calltree_build(struct calltree *t, const struct profile *p)
{
	size_t nagg = agg__nframes(profile__agg(p));
	int err;

	t->p = p;
	t->strs = strtab__new();
	t->agg_map = malloc((nagg ? nagg : 1) * sizeof(*t->agg_map));
	err = t->strs && t->agg_map ? 0 : -ENOMEM;
	if (!err)
		err = grow_array((void **)&t->nodes, &t->nodes_cap, 1, sizeof(*t->nodes));
	if (err)
		return err;
	memset(t->agg_map, 0xff, (nagg ? nagg : 1) * sizeof(*t->agg_map));
	t->nodes[0] = (struct calltree_node){
		.frame = NONE, .parent = NONE, .first_child = NONE, .next_sibling = NONE
	};
	t->nnodes = 1;
	err = merge_stacks(t);
	if (!err)
		err = rank_frames(t);
	if (err)
		return err;
	/* children come after their parents, so one backward pass sums every subtree */
	for (size_t i = t->nnodes; i-- > 0;) {
		t->nodes[i].total += t->nodes[i].self;
		if (i)
			t->nodes[t->nodes[i].parent].total += t->nodes[i].total;
	}
	return 0;
}

void calltree_free(struct calltree *t)
{
	strtab__free(t->strs);
	free(t->frames);
	free(t->nodes);
	free(t->rank);
	free(t->stack_node);
	free(t->agg_map);
	free(t->root_map);
	htab_free(&t->child_index);
	memset(t, 0, sizeof(*t));
}

size_t calltree_nstacks(const struct calltree *t)
{
	size_t n = 0;

	for (size_t i = 0; i < t->nnodes; i++)
		n += t->nodes[i].self > 0;
	return n;
}

static int cmp_rank(const void *a, const void *b, void *ctx)
{
	const struct calltree *t = ctx;
	uint32_t x = t->rank[t->nodes[*(const uint32_t *)a].frame];
	uint32_t y = t->rank[t->nodes[*(const uint32_t *)b].frame];

	return x < y ? -1 : x > y;
}

uint32_t *calltree_preorder(const struct calltree *t)
{
	uint32_t *order = malloc((t->nnodes ? t->nnodes : 1) * sizeof(*order));
	uint32_t *stack = malloc((t->nnodes ? t->nnodes : 1) * sizeof(*stack));
	uint32_t *kids = malloc((t->nnodes ? t->nnodes : 1) * sizeof(*kids));
	size_t top = 0, n = 0;

	if (!order || !stack || !kids) {
		free(order);
		order = NULL;
		goto out;
	}
	if (t->nnodes)
		stack[top++] = 0;
	while (top) {
		uint32_t id = stack[--top], c;
		size_t nkids = 0;

		order[n++] = id;
		for (c = t->nodes[id].first_child; c != NONE; c = t->nodes[c].next_sibling)
			kids[nkids++] = c;
		qsort_r(kids, nkids, sizeof(*kids), cmp_rank, (void *)t);
		/* every node is pushed once, so nnodes slots are enough */
		while (nkids)
			stack[top++] = kids[--nkids];
	}
out:
	free(stack);
	free(kids);
	return order;
}
