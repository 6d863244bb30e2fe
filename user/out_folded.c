// SPDX-License-Identifier: MIT
/* Collapsed stacks ("folded"): one line per distinct stack, root first,
 * `frame;frame;... COUNT`, sorted so equal profiles give equal files. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "out.h"

struct line {
	char *text;
	uint64_t count;
};

static int cmp_line(const void *a, const void *b)
{
	return strcmp(((const struct line *)a)->text, ((const struct line *)b)->text);
}

int out_folded_frame(struct strbuf *sb, const struct symtab *st, const struct agg_frame *fr)
{
	int err = escape_folded(sb, symtab__func_name(st, fr->func));

	if (!*symtab__func_file(st, fr->func))
		return err; /* a pseudo-frame: its label alone */
	if (!err)
		err = strbuf_add(sb, " (", 2);
	if (!err)
		err = escape_folded(sb, symtab__func_file(st, fr->func));
	if (!err)
		err = strbuf_addf(sb, ":%d)", fr->line);
	return err;
}

static int format_stack(struct strbuf *sb, const struct profile *p, const struct agg_stack *s)
{
	const struct agg *agg = profile__agg(p);
	const struct symtab *st = profile__symtab(p);
	const uint32_t *ids = agg__stack_frames(agg, s);
	bool first = true;
	int err = 0;

	/* trace with several probes: the probe is the root, each probe's stacks apart */
	if (profile__opts(p)->nprobes > 1) {
		const char *probe = s->probe < PW_MAX_PROBES ? profile__opts(p)->probe_names[s->probe]
							     : NULL;

		err = escape_folded(sb, probe ? probe : "?");
		first = false;
	}
	if (!err && profile__opts(p)->by_process) {
		char tag[PROFILE_TAG_SIZE];
		const struct profile_process *pr = profile__process(p, s->proc);

		profile__process_tag(p, s->proc, tag, sizeof(tag));
		if (!first)
			err = strbuf_add(sb, ";", 1);
		if (!err)
			err = escape_folded(sb, pr ? pr->comm : "?");
		if (!err)
			err = strbuf_add(sb, tag, strlen(tag));
		first = false;
	}
	if (!err && profile__opts(p)->by_thread) {
		if (!first)
			err = strbuf_add(sb, ";", 1);
		if (!err)
			err = escape_folded(sb, profile__proc_thread_name(p, s->proc, s->tid));
		if (!err)
			err = strbuf_addf(sb, " (%u)", s->tid);
		first = false;
	}
	for (uint32_t i = 0; i < s->nframes && !err; i++) {
		if (!first)
			err = strbuf_add(sb, ";", 1);
		if (!err)
			err = out_folded_frame(sb, st, agg__frame(agg, ids[i]));
		first = false;
	}
	return err;
}

int out_folded_write(FILE *f, const struct profile *p)
{
	const struct agg *agg = profile__agg(p);
	size_t n = agg__nstacks(agg), i;
	struct line *lines = calloc(n ? n : 1, sizeof(*lines));
	struct strbuf sb = { 0 };
	int err = 0;

	if (!lines)
		return -ENOMEM;
	for (i = 0; i < n && !err; i++) {
		const struct agg_stack *s = agg__stack(agg, i);

		strbuf_reset(&sb);
		err = format_stack(&sb, p, s);
		if (!err && !sb.len)
			err = strbuf_add(&sb, "<no python frames>", 18);
		if (!err) {
			lines[i].text = strdup(sb.buf);
			lines[i].count = s->count;
			if (!lines[i].text)
				err = -ENOMEM;
		}
	}
	if (!err) {
		qsort(lines, n, sizeof(*lines), cmp_line);
		for (i = 0; i < n; i++) {
			uint64_t count = lines[i].count;

			/* two stacks can print alike (e.g. frames whose line is unknown) */
			while (i + 1 < n && !strcmp(lines[i].text, lines[i + 1].text))
				count += lines[++i].count;
			fprintf(f, "%s %llu\n", lines[i].text, (unsigned long long)count);
		}
		if (ferror(f))
			err = -EIO;
	}
	for (i = 0; i < n; i++)
		free(lines[i].text);
	free(lines);
	strbuf_free(&sb);
	return err;
}
