// SPDX-License-Identifier: MIT
/* Collapsed stacks ("folded"): one line per distinct stack, root first,
 * `frame;frame;... COUNT`, sorted so equal profiles give equal files. */
#define _GNU_SOURCE /* qsort_r */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/escape.h"
#include "lib/htab.h"
#include "output/out.h"
#include "lib/util.h"

int out_folded_frame(struct strbuf *sb, const struct symtab *st, const struct agg_frame *fr)
{
	enum frame_kind kind = symtab__func_kind(st, fr->func);
	int err = escape_folded(sb, symtab__func_name(st, fr->func));

	if (frame_kind_is_machine(kind)) {
		/* `do_syscall_64 [kernel]`: the name and its kind, as perf's tools write it */
		const char *suffix = frame_kind_suffix(kind);

		return err ? err : strbuf_add(sb, suffix, strlen(suffix));
	}
	if (kind == FRAME_PSEUDO || !*symtab__func_file(st, fr->func))
		return err; /* a pseudo-frame: its label alone */
	if (!err)
		err = strbuf_add(sb, " (", 2);
	if (!err)
		err = escape_folded(sb, symtab__func_file(st, fr->func));
	if (!err)
		err = strbuf_addf(sb, ":%d)", fr->line);
	return err;
}

/* A line is its parts joined by ';': the probe (trace with several), the process, the
 * thread, the frames root first. Each part's text is made once and kept (frames by id,
 * processes by id, threads by (process, tid)), and lines are compared and printed from
 * those parts: holding every line's text at once was most of record's peak memory with
 * tens of thousands of stacks. */
struct part_cache {
	const struct profile *p;
	char **frames; /* by frame id */
	char **procs;  /* by process id */
	char *probes[PW_MAX_PROBES];
	struct thread_part {
		uint32_t proc, tid;
		char *text;
	} * threads;
	size_t nthreads, cap_threads;
	struct htab thread_index;
	int err;
};

static char *finish_part(struct part_cache *c, struct strbuf *sb, int err)
{
	char *text = NULL;

	if (!err)
		err = strbuf_add(sb, "", 0); /* a buffer even when the part is empty */
	if (!err)
		text = sb->buf;
	else
		strbuf_free(sb);
	if (!text && !c->err)
		c->err = err ? err : -ENOMEM;
	return text;
}

static const char *frame_part(struct part_cache *c, uint32_t id)
{
	struct strbuf sb = { 0 };

	if (!c->frames[id])
		c->frames[id] = finish_part(c, &sb,
					    out_folded_frame(&sb, profile__symtab(c->p),
							     agg__frame(profile__agg(c->p), id)));
	return c->frames[id] ? c->frames[id] : "";
}

static const char *proc_part(struct part_cache *c, uint32_t proc)
{
	const struct profile_process *pr;
	char tag[PROFILE_TAG_SIZE];
	struct strbuf sb = { 0 };
	int err;

	if (proc >= profile__nprocesses(c->p))
		return "?";
	if (c->procs[proc])
		return c->procs[proc];
	pr = profile__process(c->p, proc);
	profile__process_tag(c->p, proc, tag, sizeof(tag));
	err = escape_folded(&sb, pr ? pr->comm : "?");
	if (!err)
		err = strbuf_add(&sb, tag, strlen(tag));
	c->procs[proc] = finish_part(c, &sb, err);
	return c->procs[proc] ? c->procs[proc] : "";
}

static const char *probe_part(struct part_cache *c, uint32_t probe)
{
	const char *name = probe < PW_MAX_PROBES ? profile__opts(c->p)->probe_names[probe] : NULL;
	struct strbuf sb = { 0 };

	if (probe >= PW_MAX_PROBES)
		return "?";
	if (!c->probes[probe])
		c->probes[probe] = finish_part(c, &sb, escape_folded(&sb, name ? name : "?"));
	return c->probes[probe] ? c->probes[probe] : "";
}

static uint64_t thread_hash(uint32_t proc, uint32_t tid)
{
	return hash_mix64(((uint64_t)proc << 32) | tid);
}

static bool thread_eq(uint32_t id, const void *key, void *ctx)
{
	const struct part_cache *c = ctx;
	const struct thread_part *k = key;

	return c->threads[id].proc == k->proc && c->threads[id].tid == k->tid;
}

static const char *thread_part(struct part_cache *c, uint32_t proc, uint32_t tid)
{
	struct thread_part key = { .proc = proc, .tid = tid }, *t;
	struct strbuf sb = { 0 };
	uint64_t h = thread_hash(proc, tid);
	uint32_t id;
	int err;

	if (htab_find(&c->thread_index, h, thread_eq, &key, c, &id))
		return c->threads[id].text;
	if (c->nthreads == c->cap_threads) {
		size_t cap = c->cap_threads ? 2 * c->cap_threads : 16;
		struct thread_part *grown = realloc(c->threads, cap * sizeof(*grown));

		if (!grown) {
			c->err = -ENOMEM;
			return "";
		}
		c->threads = grown;
		c->cap_threads = cap;
	}
	err = escape_folded(&sb, profile__proc_thread_name(c->p, proc, tid));
	if (!err)
		err = strbuf_addf(&sb, " (%u)", tid);
	key.text = finish_part(c, &sb, err);
	if (!key.text)
		return "";
	if (htab_insert(&c->thread_index, h, (uint32_t)c->nthreads)) {
		free(key.text);
		c->err = -ENOMEM;
		return "";
	}
	t = &c->threads[c->nthreads++];
	*t = key;
	return t->text;
}

/* Part i of stack s's line; *n is set to how many it has. */
static const char *line_part(struct part_cache *c, const struct agg_stack *s, uint32_t i,
			     uint32_t *n)
{
	const struct profile_opts *o = profile__opts(c->p);
	uint32_t heads = (o->nprobes > 1) + !!o->by_process + !!o->by_thread;

	*n = heads + s->nframes;
	if (o->nprobes > 1 && i-- == 0)
		return probe_part(c, s->probe);
	if (o->by_process && i-- == 0)
		return proc_part(c, s->proc);
	if (o->by_thread && i-- == 0)
		return thread_part(c, s->proc, s->tid);
	return frame_part(c, agg__stack_frames(profile__agg(c->p), s)[i]);
}

/* Walks the bytes of a line as if its parts were joined. */
struct line_cursor {
	struct part_cache *c;
	const struct agg_stack *s;
	const char *at;	  /* in the current part */
	uint32_t part, n; /* the current part, how many */
};

static void cursor_start(struct line_cursor *k, struct part_cache *c, const struct agg_stack *s)
{
	k->c = c;
	k->s = s;
	k->part = 0;
	k->at = line_part(c, s, 0, &k->n);
	/* an empty line says so */
	if (!k->n || (k->n == 1 && !*k->at)) {
		k->at = "<no python frames>";
		k->n = 1;
	}
}

/* The next byte, or -1 at the end. */
static int cursor_next(struct line_cursor *k)
{
	uint32_t n;

	if (*k->at)
		return (unsigned char)*k->at++;
	if (k->part + 1 >= k->n)
		return -1;
	k->at = line_part(k->c, k->s, ++k->part, &n);
	return ';';
}

static int cmp_stacks(const void *a, const void *b, void *ctx)
{
	struct part_cache *c = ctx;
	const struct agg *agg = profile__agg(c->p);
	struct line_cursor x, y;
	int cx, cy;

	cursor_start(&x, c, agg__stack(agg, *(const uint32_t *)a));
	cursor_start(&y, c, agg__stack(agg, *(const uint32_t *)b));
	do {
		cx = cursor_next(&x);
		cy = cursor_next(&y);
	} while (cx == cy && cx >= 0);
	return cx - cy;
}

static void print_line(FILE *f, struct part_cache *c, const struct agg_stack *s, uint64_t count)
{
	struct line_cursor k;
	int ch;

	cursor_start(&k, c, s);
	while ((ch = cursor_next(&k)) >= 0)
		putc(ch, f);
	fprintf(f, " %llu\n", (unsigned long long)count);
}

static void free_parts(struct part_cache *c, size_t nframes, size_t nprocs)
{
	for (size_t i = 0; c->frames && i < nframes; i++)
		free(c->frames[i]);
	for (size_t i = 0; c->procs && i < nprocs; i++)
		free(c->procs[i]);
	for (size_t i = 0; i < PW_MAX_PROBES; i++)
		free(c->probes[i]);
	for (size_t i = 0; i < c->nthreads; i++)
		free(c->threads[i].text);
	free(c->frames);
	free(c->procs);
	free(c->threads);
	htab_free(&c->thread_index);
}

int out_folded_write(FILE *f, const struct profile *p)
{
	const struct agg *agg = profile__agg(p);
	size_t n = agg__nstacks(agg), nframes = agg__nframes(agg), nprocs = profile__nprocesses(p),
	       i;
	struct part_cache c = { .p = p,
				.frames = calloc(nframes ? nframes : 1, sizeof(char *)),
				.procs = calloc(nprocs ? nprocs : 1, sizeof(char *)) };
	uint32_t *order = calloc(n ? n : 1, sizeof(*order));
	int err = 0;

	if (!order || !c.frames || !c.procs) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < n; i++)
		order[i] = (uint32_t)i;
	qsort_r(order, n, sizeof(*order), cmp_stacks, &c);
	for (i = 0; i < n && !c.err; i++) {
		const struct agg_stack *s = agg__stack(agg, order[i]);
		uint64_t count = s->count;

		/* two stacks can print alike (e.g. frames whose line is unknown) */
		while (i + 1 < n && !cmp_stacks(&order[i], &order[i + 1], &c))
			count += agg__stack(agg, order[++i])->count;
		print_line(f, &c, s, count);
	}
	err = c.err;
	if (!err && ferror(f))
		err = -EIO;
out:
	free_parts(&c, nframes, nprocs);
	free(order);
	return err;
}
